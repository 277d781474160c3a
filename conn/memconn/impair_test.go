package memconn_test

import (
	"github.com/goverbs/goverbs/internal/leakcheck"

	"bytes"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/conn/memconn"
)

// numbered returns count datagrams of size bytes to dst, each starting
// with its index.
func numbered(dst netip.AddrPort, count, size int) []conn.Message {
	msgs := make([]conn.Message, count)
	for i := range msgs {
		buf := bytes.Repeat([]byte{0x5a}, size)
		binary.BigEndian.PutUint32(buf, uint32(i))
		msgs[i] = conn.Message{Buf: buf, Addr: dst}
	}
	return msgs
}

// sendAll sends msgs in batches of 64.
func sendAll(t testing.TB, b *memconn.Bind, msgs []conn.Message) {
	t.Helper()
	for i := 0; i < len(msgs); i += 64 {
		if k, err := b.Send(msgs[i:min(i+64, len(msgs))]); err != nil || k != min(64, len(msgs)-i) {
			t.Fatalf("Send = %d, %v", k, err)
		}
	}
}

// drain receives everything the fabric delivered to b (Recv must not
// block: all delayed datagrams must have arrived).
func drain(t testing.TB, n *memconn.Network, b *memconn.Bind) [][]byte {
	t.Helper()
	var out [][]byte
	for _, m := range recvN(t, b, int(n.Stats().Delivered)) {
		out = append(out, bytes.Clone(m.Buf[:m.N]))
	}
	return out
}

func checkInvariant(t testing.TB, s memconn.Stats) {
	t.Helper()
	d := s.Dropped
	if s.Sent+s.Duplicated != s.Delivered+d.Loss+d.Overflow+d.NoReceiver+d.Filter {
		t.Errorf("unbalanced stats %+v", s)
	}
}

func near(t testing.TB, what string, got uint64, want float64) {
	t.Helper()
	if float64(got) < want*0.8 || float64(got) > want*1.2 {
		t.Errorf("%s = %d, want about %.0f", what, got, want)
	}
}

// Loss, duplication and corruption happen at their rates, and the same
// seed makes the same decisions: two fabrics deliver the very same
// datagrams. A different seed decides differently.
func TestImpairmentsReproducible(t *testing.T) {
	leakcheck.Check(t)
	const count = 10000
	imp := memconn.Impairments{Loss: 0.1, Duplicate: 0.05, Corrupt: 0.02, Seed: 42}
	run := func(imp memconn.Impairments) (memconn.Stats, [][]byte) {
		n, a, b := pair(t, memconn.Options{InboxSize: 2 * count, Impairments: imp})
		sendAll(t, a, numbered(addrB, count, 100))
		return n.Stats(), drain(t, n, b)
	}
	s1, got1 := run(imp)
	s2, got2 := run(imp)
	if s1 != s2 {
		t.Errorf("same seed, different stats:\n%+v\n%+v", s1, s2)
	}
	if !slices.EqualFunc(got1, got2, bytes.Equal) {
		t.Error("same seed, different datagrams delivered")
	}
	t.Logf("seed 42, %d datagrams: %+v", count, s1)
	checkInvariant(t, s1)
	near(t, "Loss", s1.Dropped.Loss, 0.1*count)
	near(t, "Duplicated", s1.Duplicated, 0.05*0.9*count)
	near(t, "Corrupted", s1.Corrupted, 0.02*0.9*count)

	imp.Seed = 43
	s3, got3 := run(imp)
	if s3 == s1 || slices.EqualFunc(got1, got3, bytes.Equal) {
		t.Error("another seed made the same decisions")
	}
}

// SetImpairments changes the fabric at run time and reseeds it.
func TestSetImpairments(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{InboxSize: 1 << 12})
	sendAll(t, a, numbered(addrB, 100, 10))
	n.SetImpairments(memconn.Impairments{Loss: 1, Jitter: -1, Corrupt: 7})
	if got := n.Impairments(); got.Loss != 1 || got.Jitter != 0 || got.Corrupt != 1 {
		t.Errorf("impairments not clamped: %+v", got)
	}
	sendAll(t, a, numbered(addrB, 100, 10))
	n.SetImpairments(memconn.Impairments{})
	sendAll(t, a, numbered(addrB, 100, 10))
	if s := n.Stats(); s.Delivered != 200 || s.Dropped.Loss != 100 {
		t.Errorf("stats %+v", s)
	}
	drain(t, n, b)
}

// Corruption flips exactly one bit.
func TestCorruptFlipsOneBit(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{Impairments: memconn.Impairments{Corrupt: 1, Seed: 7}})
	sent := numbered(addrB, 200, 64)
	sendAll(t, a, sent)
	for i, m := range recvN(t, b, len(sent)) {
		flipped := 0
		for j, c := range m.Buf[:m.N] {
			flipped += bits.OnesCount8(c ^ sent[i].Buf[j])
		}
		if m.N != len(sent[i].Buf) || flipped != 1 {
			t.Errorf("datagram %d: %d bits flipped", i, flipped)
		}
	}
	if s := n.Stats(); s.Corrupted != uint64(len(sent)) {
		t.Errorf("Corrupted = %d", s.Corrupted)
	}
}

// Delay runs on the bubble's virtual clock: Recv blocks durably until
// the fabric's timer fires, and the test takes no wall time.
func TestDelaySynctest(t *testing.T) {
	const delay = 3 * time.Second
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		n, a, b := pair(t, memconn.Options{Impairments: memconn.Impairments{Delay: delay}})
		start := time.Now()
		sendAll(t, a, numbered(addrB, 5, 100))
		synctest.Wait()
		if s := n.Stats(); s.Delivered != 0 {
			t.Fatalf("delivered before the delay: %+v", s)
		}
		time.Sleep(delay - time.Millisecond)
		synctest.Wait()
		if s := n.Stats(); s.Delivered != 0 {
			t.Fatalf("delivered 1ms early: %+v", s)
		}
		// Recv blocks until the timer fires and returns what has arrived,
		// which may be fewer than all five at that instant: collect them.
		var got []uint32
		for len(got) < 5 {
			msgs := buffers(5-len(got), 2048)
			k, err := b.Recv(msgs)
			if err != nil || k == 0 {
				t.Fatalf("Recv = %d, %v", k, err)
			}
			if el := time.Since(start); el != delay {
				t.Errorf("datagram arrived after %v of virtual time, want %v", el, delay)
			}
			for _, m := range msgs[:k] {
				got = append(got, binary.BigEndian.Uint32(m.Buf))
			}
		}
		for i, v := range got {
			if v != uint32(i) {
				t.Errorf("datagram %d out of order: %v", i, got)
			}
		}
	})
	if d := time.Since(wall); d > delay/2 {
		t.Errorf("took %v of wall time for %v of virtual time", d, delay)
	}
}

// With jitter each datagram arrives within [Delay, Delay+Jitter); held
// (reordered) ones ReorderDelay later, overtaken by the others.
func TestJitterAndReorderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay, jitter, count = 10 * time.Millisecond, 5 * time.Millisecond, 200
		n, a, b := pair(t, memconn.Options{Impairments: memconn.Impairments{
			Delay: delay, Jitter: jitter, Reorder: 0.2, Seed: 3}})
		start := time.Now()
		sendAll(t, a, numbered(addrB, count, 50))
		seen := make([]bool, count)
		var order []uint32
		msgs := buffers(1, 2048)
		for range count {
			if _, err := b.Recv(msgs); err != nil {
				t.Fatal(err)
			}
			i := binary.BigEndian.Uint32(msgs[0].Buf)
			if seen[i] {
				t.Fatalf("datagram %d twice", i)
			}
			seen[i] = true
			order = append(order, i)
			if d := time.Since(start); d < delay || d >= delay+jitter+memconn.ReorderDelay {
				t.Errorf("datagram %d after %v", i, d)
			}
		}
		if slices.IsSorted(order) {
			t.Error("jitter and reordering left the order intact")
		}
		s := n.Stats()
		near(t, "Reordered", s.Reordered, 0.2*count)
		checkInvariant(t, s)
	})
}

// Everything random — delays and reordering included — is reproducible
// from the seed when run in virtual time.
func TestAllImpairmentsReproducibleSynctest(t *testing.T) {
	imp := memconn.Impairments{Loss: 0.05, Duplicate: 0.05, Reorder: 0.1, Corrupt: 0.05,
		Delay: time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 99}
	run := func() (s memconn.Stats, got [][]byte) {
		synctest.Test(t, func(t *testing.T) {
			n, a, b := pair(t, memconn.Options{Impairments: imp})
			sendAll(t, a, numbered(addrB, 1000, 80))
			time.Sleep(time.Second)
			s, got = n.Stats(), drain(t, n, b)
			checkInvariant(t, s)
		})
		return s, got
	}
	s1, got1 := run()
	s2, got2 := run()
	if s1 != s2 || !slices.EqualFunc(got1, got2, bytes.Equal) {
		t.Errorf("same seed, different runs:\n%+v\n%+v", s1, s2)
	}
}

// Closing the network discards delayed datagrams and stops its timer.
func TestCloseWithDelayedSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, a, _ := pair(t, memconn.Options{Impairments: memconn.Impairments{Delay: time.Second}})
		sendAll(t, a, numbered(addrB, 3, 10))
		n.Close()
		time.Sleep(2 * time.Second)
		if s := n.Stats(); s.Dropped.NoReceiver != 3 || s.Delivered != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}

// Mark sets congestion experienced on ECN-capable datagrams only, at its
// rate; the receiver sees each datagram's codepoint.
func TestMarkECN(t *testing.T) {
	leakcheck.Check(t)
	const count = 4000
	n, a, b := pair(t, memconn.Options{InboxSize: 2 * count, Impairments: memconn.Impairments{Mark: 0.25, Seed: 7}})
	sendAll(t, a, numbered(addrB, count, 100)) // not ECN-capable
	if err := a.SetECN(conn.ECNECT0); err != nil {
		t.Fatal(err)
	}
	sendAll(t, a, numbered(addrB, count, 100))
	var ce, ect, not uint64
	for i, m := range recvN(t, b, 2*count) { // in sending order: no delays
		switch {
		case m.ECN == conn.ECNCE && i < count:
			t.Fatalf("datagram %d marked, but it was not ECN-capable", i)
		case m.ECN == conn.ECNCE:
			ce++
		case m.ECN == conn.ECNECT0:
			ect++
		case m.ECN == conn.ECNNotECT:
			not++
		}
	}
	if s := n.Stats(); s.Marked != ce || ce+ect != count || not != count {
		t.Errorf("%d marked (stats %d), %d ECT(0), %d not ECN-capable; want %d of each kind", ce, s.Marked, ect, not, count)
	}
	near(t, "Marked", ce, 0.25*count)
}
