package conn

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/internal/leakcheck"
	"golang.org/x/sys/unix"
)

// gsoBatch is a batch of runs that exercise the coalescing rules: equal
// sizes with a shorter last, a run longer than the segment limit, a run
// over the byte limit, a size change, a larger datagram ending a run, and
// a datagram to another address in between.
func gsoBatch(to, other netip.AddrPort) []Message {
	var sizes []int
	add := func(n, size int) {
		for range n {
			sizes = append(sizes, size)
		}
	}
	add(20, 1000) // run of 21 with the next
	add(1, 500)
	add(3, 40)  // a run of 3 with the next two
	add(2, 40)  //
	add(70, 64) // 64 + 6: the segment limit
	add(20, 4112)
	add(1, 4200) // longer: starts a run of its own
	add(1, 4200)
	sizes = append(sizes, -1) // to the other address
	add(2, 4200)
	msgs := make([]Message, len(sizes))
	for i, s := range sizes {
		if s < 0 {
			msgs[i] = Message{Buf: payload(i, 300), Addr: other}
			continue
		}
		msgs[i] = Message{Buf: payload(i, s), Addr: to}
	}
	return msgs
}

// wantPlan is the IPv4 ID plan of gsoBatch (runs numbered from 0).
func wantPlan() []uint16 {
	var ids []uint16
	run := func(n int) {
		for j := range n {
			ids = append(ids, uint16(j))
		}
	}
	run(21)
	run(5) // 3 + 2 of 40
	run(64)
	run(6)
	run(15) // 15 × 4112 = 61680 ≤ 65507; 16 would not fit
	run(5)
	run(2) // 4200, 4200
	run(1) // other address
	run(2)
	return ids
}

// TestGSOSendArrivesSplit sends planned runs and checks that each datagram
// arrives as its own message, in order and intact, both on a receiver that
// coalesces (GRO, which then reports each datagram's index in its run as
// the ID guess) and on one that does not.
func TestGSOSendArrivesSplit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		laddr netip.AddrPort
		rx    UDPOptions
	}{
		{"IPv4/GRO", loop4, UDPOptions{}},
		{"IPv4/plain", loop4, UDPOptions{NoOffload: true}},
		{"IPv6/GRO", loop6, UDPOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			t.Setenv(noOffloadEnv, "")
			a := listenWith(t, tc.laddr, UDPOptions{})
			b := listenWith(t, tc.laddr, tc.rx)
			c := listenWith(t, tc.laddr, UDPOptions{NoOffload: true})
			if gso, _ := a.Offload(); !gso {
				t.Skip("no UDP GSO on this kernel")
			}
			if _, gro := b.Offload(); gro == tc.rx.NoOffload {
				t.Fatalf("receiver GRO = %v with %+v", gro, tc.rx)
			}
			send := gsoBatch(b.LocalAddr(), c.LocalAddr())
			a.PlanIPIDs(send)
			want := wantPlan()
			for i := range send {
				id := want[i]
				if tc.laddr.Addr().Is6() {
					id = 0
				}
				if !send[i].HasIPID || send[i].IPID != id {
					t.Fatalf("datagram %d (%d bytes): planned ID %d, %v; want %d", i, len(send[i].Buf), send[i].IPID, send[i].HasIPID, id)
				}
			}
			if n, err := a.Send(send); n != len(send) || err != nil {
				t.Fatalf("Send = %d, %v", n, err)
			}
			var toB []int
			for i := range send {
				if send[i].Addr == b.LocalAddr() {
					toB = append(toB, i)
				}
			}
			recv := make([]Message, len(toB))
			for i := range recv {
				recv[i].Buf = make([]byte, 5000)
			}
			// Few messages per call, so that coalesced buffers are handed
			// out across calls.
			for got := 0; got < len(recv); {
				n, err := b.Recv(recv[got:min(got+7, len(recv))])
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
			for k, i := range toB {
				m := &recv[k]
				if !bytes.Equal(m.Buf[:m.N], send[i].Buf) {
					t.Fatalf("message %d: %d bytes, want datagram %d (%d bytes)", k, m.N, i, len(send[i].Buf))
				}
				if m.Addr != a.LocalAddr() || m.HasIPID {
					t.Errorf("message %d: Addr %v HasIPID %v", k, m.Addr, m.HasIPID)
				}
				// Loopback hands a GSO send to a GRO socket whole.
				if !tc.rx.NoOffload && m.IPID != send[i].IPID {
					t.Errorf("message %d: ID guess %d, want %d", k, m.IPID, send[i].IPID)
				}
			}
			other := []Message{{Buf: make([]byte, 5000)}}
			recvAll(t, c, other, 1)
			if i := toB[len(toB)-3] + 1; !bytes.Equal(other[0].Buf[:other[0].N], send[i].Buf) {
				t.Errorf("other address got %d bytes, want datagram %d", other[0].N, i)
			}
		})
	}
}

// TestGSOUnplannedSentAlone: datagrams without a plan are not coalesced
// (their checksums cannot be for the IDs a run would give them), and a
// plan made while the bind coalesced is refused once it stopped.
func TestGSOUnplannedSentAlone(t *testing.T) {
	leakcheck.Check(t)
	t.Setenv(noOffloadEnv, "")
	a, b := listenWith(t, loop4, UDPOptions{}), listenWith(t, loop4, UDPOptions{})
	if gso, gro := a.Offload(); !gso || !gro {
		t.Skip("no UDP GSO/GRO on this kernel")
	}
	send := make([]Message, 10)
	for i := range send {
		send[i] = Message{Buf: payload(i, 1000), Addr: b.LocalAddr()}
	}
	// Without an ID, or saying ID 0 without a plan (as memconn reports
	// received datagrams), each goes out alone.
	for _, sayID := range []bool{false, true} {
		for i := range send {
			send[i].IPID, send[i].HasIPID = 0, sayID
		}
		if n, err := a.Send(send); n != len(send) || err != nil {
			t.Fatalf("HasIPID %v: Send = %d, %v", sayID, n, err)
		}
		for i, m := range recvSent(t, b, send) {
			if m.IPID != 0 {
				t.Errorf("HasIPID %v: message %d: ID guess %d, want 0", sayID, i, m.IPID)
			}
		}
	}
	a.PlanIPIDs(send)
	a.gso.Store(false)
	// The first datagram's ID 0 holds alone too; the second's does not.
	if n, err := a.Send(send); n != 1 || err != ErrReplan {
		t.Errorf("Send of a stale plan = %d, %v; want 1, ErrReplan", n, err)
	}
}

// TestGSOFallback makes the kernel refuse a GSO send (a socket that sends
// without UDP checksums cannot segment: EINVAL, as EIO on a device
// without checksum offload) and checks that the bind stops coalescing,
// returns what it sent with ErrReplan, and that the replanned rest
// arrives in order.
func TestGSOFallback(t *testing.T) {
	leakcheck.Check(t)
	t.Setenv(noOffloadEnv, "")
	a, b := listenWith(t, loop4, UDPOptions{}), listenWith(t, loop4, UDPOptions{})
	if gso, _ := a.Offload(); !gso {
		t.Skip("no UDP GSO on this kernel")
	}
	if err := unix.SetsockoptInt(a.sock.fd, unix.SOL_SOCKET, unix.SO_NO_CHECK, 1); err != nil {
		t.Skip("SO_NO_CHECK:", err)
	}
	sizes := []int{100, 300, 300, 300, 100}
	send := make([]Message, len(sizes))
	for i, s := range sizes {
		send[i] = Message{Buf: payload(i, s), Addr: b.LocalAddr()}
	}
	a.PlanIPIDs(send) // 100 alone (the next is longer), then a run of 4
	n, err := a.Send(send)
	if n != 1 || err != ErrReplan {
		t.Fatalf("Send = %d, %v; want 1, ErrReplan", n, err)
	}
	if gso, _ := a.Offload(); gso {
		t.Error("bind still coalesces after the kernel refused")
	}
	a.PlanIPIDs(send[n:])
	for i := n; i < len(send); i++ {
		if !send[i].HasIPID || send[i].IPID != 0 {
			t.Errorf("replanned datagram %d: ID %d", i, send[i].IPID)
		}
	}
	if m, err := a.Send(send[n:]); m != len(send)-n || err != nil {
		t.Fatalf("Send of the rest = %d, %v", m, err)
	}
	recvSent(t, b, send)
}

// recvSent receives as many datagrams as send has and checks that they
// are send's, in order.
func recvSent(t *testing.T, b *UDPBind, send []Message) []Message {
	t.Helper()
	recv := make([]Message, len(send))
	for i := range recv {
		recv[i].Buf = make([]byte, 2000)
	}
	recvAll(t, b, recv, len(recv))
	for i := range recv {
		if !bytes.Equal(recv[i].Buf[:recv[i].N], send[i].Buf) {
			t.Errorf("message %d: %d bytes, want datagram %d", i, recv[i].N, i)
		}
	}
	return recv
}

// TestGSOZeroAllocs: planning, a coalesced send and a coalesced receive
// allocate nothing.
func TestGSOZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts need a build without the race detector")
	}
	leakcheck.Check(t)
	t.Setenv(noOffloadEnv, "")
	a, b, send, recv := batchPair(t, loop4, udpBatchSize, 1100)
	if gso, gro := a.Offload(); !gso || !gro {
		t.Skip("no UDP GSO/GRO on this kernel")
	}
	trip := func() {
		a.PlanIPIDs(send)
		roundTrip(t, a, b, send, recv)
	}
	trip()
	if allocs := testing.AllocsPerRun(100, trip); allocs != 0 {
		t.Errorf("Plan+Send+Recv of %d datagrams: %v allocations, want 0", len(send), allocs)
	}
	big := []Message{{Buf: make([]byte, MaxDatagram)}}
	coalesced := func() {
		a.PlanIPIDs(send)
		if n, err := a.Send(send); n != len(send) || err != nil {
			t.Fatalf("Send = %d, %v", n, err)
		}
		for got := 0; got < len(send); {
			n, err := b.RecvCoalesced(big)
			if err != nil || n != 1 {
				t.Fatalf("RecvCoalesced = %d, %v", n, err)
			}
			got += big[0].Datagrams()
		}
	}
	coalesced()
	if allocs := testing.AllocsPerRun(100, coalesced); allocs != 0 {
		t.Errorf("Plan+Send+RecvCoalesced of %d datagrams: %v allocations, want 0", len(send), allocs)
	}
}

// BenchmarkUDPOffload moves 64 planned 1100-byte datagrams per iteration
// over loopback with segmentation offload on (one GSO send and one
// coalesced receive) and off (64 datagrams each way).
func BenchmarkUDPOffload(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts UDPOptions
	}{{"gso", UDPOptions{}}, {"nogso", UDPOptions{NoOffload: true}}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv(noOffloadEnv, "")
			x, y, send, recv := batchPairWith(b, loop4, mode.opts, 64, 1100)
			b.SetBytes(64 * 1100)
			b.ReportAllocs()
			for b.Loop() {
				x.PlanIPIDs(send)
				roundTrip(b, x, y, send, recv)
			}
		})
	}
}

// TestRecvCoalesced receives planned runs with RecvCoalesced: each buffer
// takes a run whole, and Datagram splits it back into the datagrams sent,
// in order and intact, with the IDs a GSO send gave them (IPv4). A Recv
// of a few first leaves coalesced datagrams over, which RecvCoalesced
// hands out one per Message.
func TestRecvCoalesced(t *testing.T) {
	for _, laddr := range []netip.AddrPort{loop4, loop6} {
		t.Run(laddr.Addr().String(), func(t *testing.T) {
			leakcheck.Check(t)
			t.Setenv(noOffloadEnv, "")
			a := listenWith(t, laddr, UDPOptions{})
			b := listenWith(t, laddr, UDPOptions{})
			c := listenWith(t, laddr, UDPOptions{NoOffload: true})
			if gso, _ := a.Offload(); !gso || !b.Coalesces() {
				t.Skip("no UDP GSO/GRO on this kernel")
			}
			send := gsoBatch(b.LocalAddr(), c.LocalAddr())
			recv := make([]Message, 4)
			for i := range recv {
				recv[i].Buf = make([]byte, MaxDatagram)
			}
			for _, plainFirst := range []int{0, 2} {
				a.PlanIPIDs(send)
				if n, err := a.Send(send); n != len(send) || err != nil {
					t.Fatalf("Send = %d, %v", n, err)
				}
				first := make([]Message, plainFirst)
				for i := range first {
					first[i].Buf = make([]byte, 5000)
				}
				got := []Message{}
				if plainFirst > 0 {
					n, err := b.Recv(first)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, first[:n]...)
				}
				runs := 0
				for len(got) < len(send)-1 {
					n, err := b.RecvCoalesced(recv)
					if err != nil {
						t.Fatal(err)
					}
					for i := range recv[:n] {
						m := &recv[i]
						if m.Datagrams() > 1 {
							runs++
						}
						for j := range m.Datagrams() {
							d := m.Datagram(j)
							d.Buf = bytes.Clone(d.Buf)
							got = append(got, d)
						}
					}
				}
				if plainFirst == 0 && runs == 0 {
					t.Error("no coalesced receive")
				}
				k := 0
				for i := range send {
					if send[i].Addr != b.LocalAddr() {
						continue
					}
					m := &got[k]
					if !bytes.Equal(m.Buf[:m.N], send[i].Buf) {
						t.Fatalf("Recv of %d first: datagram %d: %d bytes, want datagram %d (%d bytes)", plainFirst, k, m.N, i, len(send[i].Buf))
					}
					if m.Addr != a.LocalAddr() || m.HasIPID || m.IPID != send[i].IPID {
						t.Errorf("Recv of %d first: datagram %d: Addr %v, ID %d %v; want %v, ID %d false", plainFirst, k, m.Addr, m.IPID, m.HasIPID, a.LocalAddr(), send[i].IPID)
					}
					k++
				}
				recvAll(t, c, []Message{{Buf: make([]byte, 5000)}}, 1)
			}
		})
	}
}

func TestMessageDatagram(t *testing.T) {
	from := netip.MustParseAddrPort("192.0.2.1:4791")
	m := Message{Buf: []byte("aaabbbcc.."), N: 8, Seg: 3, Addr: from, IPID: 7}
	if n := m.Datagrams(); n != 3 {
		t.Fatalf("Datagrams = %d, want 3", n)
	}
	for i, want := range []string{"aaa", "bbb", "cc"} {
		d := m.Datagram(i)
		if string(d.Buf) != want || d.N != len(want) || d.IPID != uint16(7+i) || d.Addr != from {
			t.Errorf("Datagram(%d) = %q N %d ID %d, want %q ID %d", i, d.Buf, d.N, d.IPID, want, 7+i)
		}
	}
	m.Addr = netip.MustParseAddrPort("[2001:db8::1]:4791")
	if d := m.Datagram(2); d.IPID != 7 {
		t.Errorf("IPv6 Datagram(2) ID %d, want 7 (no ID to number)", d.IPID)
	}
	for _, seg := range []int{0, 8, 9} {
		one := Message{Buf: []byte("aaabbbcc.."), N: 8, Seg: seg, Addr: from}
		if d := one.Datagram(0); one.Datagrams() != 1 || string(d.Buf) != "aaabbbcc" {
			t.Errorf("Seg %d: %d datagrams, first %q; want the whole 8 bytes", seg, one.Datagrams(), d.Buf)
		}
	}
}

// TestRunLimit: a bind that coalesces reports as many datagrams of a size
// as it puts in one send (runLen's limits: 64 segments, 65 507 bytes);
// one that does not, 1.
func TestRunLimit(t *testing.T) {
	t.Setenv(noOffloadEnv, "")
	a, plain := listenWith(t, loop4, UDPOptions{}), listenWith(t, loop4, UDPOptions{NoOffload: true})
	if gso, _ := a.Offload(); !gso {
		t.Skip("no UDP GSO on this kernel")
	}
	for _, size := range []int{1, 40, 1024, 4112, 4128, 40000, 65507} {
		msgs := make([]Message, 100)
		for i := range msgs {
			msgs[i] = Message{Buf: make([]byte, size), Addr: plain.LocalAddr()}
		}
		if got, want := a.RunLimit(size), runLen(msgs); got != want {
			t.Errorf("RunLimit(%d) = %d; a send of them takes %d", size, got, want)
		}
		if got := plain.RunLimit(size); got != 1 {
			t.Errorf("RunLimit(%d) = %d without offload, want 1", size, got)
		}
	}
	if got := a.RunLimit(4112); got != 15 {
		t.Errorf("RunLimit(4112) = %d, want 15 (a 4 KiB-MTU Middle packet)", got)
	}
}
