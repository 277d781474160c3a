package memconn_test

import (
	"github.com/goverbs/goverbs/internal/leakcheck"

	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/conn/memconn"
)

var (
	addrA = netip.MustParseAddrPort("10.0.0.1:4791")
	addrB = netip.MustParseAddrPort("10.0.0.2:4791")
)

func listen(t testing.TB, n *memconn.Network, addr netip.AddrPort) *memconn.Bind {
	t.Helper()
	b, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// pair returns a fabric with binds at addrA and addrB.
func pair(t testing.TB, opts memconn.Options) (*memconn.Network, *memconn.Bind, *memconn.Bind) {
	n := memconn.NewNetwork(opts)
	return n, listen(t, n, addrA), listen(t, n, addrB)
}

func payload(i, size int) []byte {
	p := bytes.Repeat([]byte{byte(i)}, size)
	copy(p, fmt.Sprintf("datagram %d", i))
	return p
}

func batch(dst netip.AddrPort, count, size int) []conn.Message {
	msgs := make([]conn.Message, count)
	for i := range msgs {
		msgs[i] = conn.Message{Buf: payload(i, size), Addr: dst}
	}
	return msgs
}

func buffers(count, size int) []conn.Message {
	msgs := make([]conn.Message, count)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size)
	}
	return msgs
}

// recvN receives exactly want datagrams (Recv blocks, so the caller must
// know they are there or on their way).
func recvN(t testing.TB, b *memconn.Bind, want int) []conn.Message {
	t.Helper()
	msgs := buffers(want, 2048)
	for got := 0; got < want; {
		n, err := b.Recv(msgs[got:])
		if err != nil {
			t.Fatalf("Recv after %d of %d: %v", got, want, err)
		}
		got += n
	}
	return msgs
}

func TestDelivery(t *testing.T) {
	leakcheck.Check(t)
	_, a, b := pair(t, memconn.Options{})
	send := batch(b.LocalAddr(), 100, 1100)
	send[7].Buf = nil // empty datagrams are datagrams too
	if n, err := a.Send(send); n != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	for i, m := range recvN(t, b, len(send)) {
		if !bytes.Equal(m.Buf[:m.N], send[i].Buf) {
			t.Errorf("datagram %d: %d bytes, want %d", i, m.N, len(send[i].Buf))
		}
		if m.Addr != a.LocalAddr() || !m.HasIPID || m.IPID != 0 {
			t.Errorf("datagram %d: Addr %v HasIPID %v IPID %d", i, m.Addr, m.HasIPID, m.IPID)
		}
	}
	// Send copies: changing the buffer after Send does not change what
	// arrives.
	a.Send(send[:1])
	send[0].Buf[0] ^= 0xff
	if m := recvN(t, b, 1)[0]; !bytes.Equal(m.Buf[:m.N], payload(0, 1100)) {
		t.Error("the datagram changed with the sender's buffer after Send")
	}
}

// A datagram sent in parts (Buf, Body, Tail) arrives as one.
func TestDeliveryParts(t *testing.T) {
	leakcheck.Check(t)
	_, a, b := pair(t, memconn.Options{})
	d := payload(3, 1000)
	send := []conn.Message{{Buf: d[:40], Body: d[40:996], Tail: d[996:], Addr: b.LocalAddr()}, {Body: d, Addr: b.LocalAddr()}}
	if n, err := a.Send(send); n != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	for i, m := range recvN(t, b, len(send)) {
		if !bytes.Equal(m.Buf[:m.N], d) {
			t.Errorf("datagram %d: %d bytes %q…, want the %d of its parts", i, m.N, m.Buf[:min(m.N, 12)], len(d))
		}
	}
}

func TestListen(t *testing.T) {
	leakcheck.Check(t)
	n := memconn.NewNetwork(memconn.Options{})
	a := listen(t, n, addrA)
	if _, err := n.Listen(addrA); err == nil {
		t.Error("second Listen on the same address succeeded")
	}
	if _, err := n.Listen(netip.MustParseAddrPort("[::ffff:10.0.0.1]:4791")); err == nil {
		t.Error("Listen on the IPv4-mapped form of a taken address succeeded")
	}
	for _, bad := range []netip.AddrPort{{}, netip.MustParseAddrPort("0.0.0.0:1"), netip.MustParseAddrPort("[::]:1")} {
		if _, err := n.Listen(bad); err == nil {
			t.Errorf("Listen(%v) succeeded", bad)
		}
	}
	p1 := listen(t, n, netip.MustParseAddrPort("10.0.0.1:0"))
	p2 := listen(t, n, netip.MustParseAddrPort("10.0.0.1:0"))
	if p1.LocalAddr().Port() == 0 || p1.LocalAddr() == p2.LocalAddr() {
		t.Errorf("port 0 gave %v and %v", p1.LocalAddr(), p2.LocalAddr())
	}
	m := listen(t, n, netip.MustParseAddrPort("[::ffff:10.0.0.9]:7"))
	if m.LocalAddr() != netip.MustParseAddrPort("10.0.0.9:7") {
		t.Errorf("mapped Listen: LocalAddr %v", m.LocalAddr())
	}
	a.Close()
	again, err := n.Listen(addrA)
	if err != nil {
		t.Fatalf("Listen after Close: %v", err)
	}
	again.Close()
}

func TestNoReceiver(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{})
	nobody := netip.MustParseAddrPort("10.0.0.3:4791")
	if k, err := a.Send(batch(nobody, 3, 10)); k != 3 || err != nil {
		t.Fatalf("Send to nobody = %d, %v; want 3, nil (like UDP)", k, err)
	}
	b.Close()
	a.Send(batch(addrB, 2, 10))
	s := n.Stats()
	if s.Sent != 5 || s.Dropped.NoReceiver != 5 || s.Delivered != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestSendErrors(t *testing.T) {
	leakcheck.Check(t)
	_, a, _ := pair(t, memconn.Options{})
	msgs := batch(addrB, 3, 10)
	msgs[1].Buf = make([]byte, memconn.MaxDatagramSize+1)
	if k, err := a.Send(msgs); k != 1 || err == nil {
		t.Errorf("Send with an oversized datagram = %d, %v", k, err)
	}
	if k, err := a.Send([]conn.Message{{Buf: []byte("x")}}); k != 0 || err == nil {
		t.Errorf("Send without address = %d, %v", k, err)
	}
}

func TestClose(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := b.Recv(buffers(1, 64))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked Recv returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Recv")
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.Recv(buffers(1, 64)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}
	if _, err := b.Send(batch(addrA, 1, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	n.Close()
	if _, err := a.Recv(buffers(1, 64)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Recv after Network.Close: %v", err)
	}
	if _, err := n.Listen(addrB); err == nil {
		t.Error("Listen after Network.Close succeeded")
	}
}

// A full inbox drops and counts, as a NIC ring does.
func TestOverflow(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{InboxSize: 8})
	a.Send(batch(addrB, 11, 10))
	s := n.Stats()
	if s.Delivered != 8 || s.Dropped.Overflow != 3 {
		t.Errorf("stats %+v; want 8 delivered, 3 overflow", s)
	}
	for i, m := range recvN(t, b, 8) {
		if !bytes.Equal(m.Buf[:m.N], payload(i, 10)) {
			t.Errorf("datagram %d: %q", i, m.Buf[:m.N])
		}
	}
}

// A datagram larger than the Recv buffer is dropped, as UDPBind does.
func TestTruncated(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{})
	send := batch(addrB, 3, 100)
	send[1].Buf = payload(1, 3000)
	a.Send(send)
	msgs := buffers(3, 1500)
	k, err := b.Recv(msgs)
	if k != 2 || err != nil {
		t.Fatalf("Recv = %d, %v; want 2", k, err)
	}
	if !bytes.Equal(msgs[1].Buf[:msgs[1].N], send[2].Buf) {
		t.Error("datagram after the truncated one not moved up")
	}
	if s := n.Stats(); s.Dropped.Truncated != 1 {
		t.Errorf("Truncated = %d", s.Dropped.Truncated)
	}
}

// Several senders and receivers at once, for -race: every datagram
// arrives exactly once, and each sender's datagrams keep their order.
func TestConcurrentSenders(t *testing.T) {
	leakcheck.Check(t)
	const senders, perSender = 8, 2000
	n := memconn.NewNetwork(memconn.Options{InboxSize: senders * perSender})
	dst := listen(t, n, addrB)
	var wg sync.WaitGroup
	for s := range senders {
		src := listen(t, n, netip.AddrPortFrom(addrA.Addr(), uint16(1000+s)))
		wg.Go(func() {
			msgs := make([]conn.Message, 16)
			for i := 0; i < perSender; i += len(msgs) {
				for j := range msgs {
					msgs[j] = conn.Message{Buf: fmt.Appendf(nil, "%d %d", s, i+j), Addr: addrB}
				}
				if k, err := src.Send(msgs); k != len(msgs) || err != nil {
					t.Errorf("Send = %d, %v", k, err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	wg.Go(func() { // the control path runs concurrently with the data path
		for {
			select {
			case <-stop:
				return
			default:
			}
			n.Stats()
			n.SetFilter(func(*memconn.Datagram) memconn.Verdict { return memconn.Deliver })
			n.SetImpairments(memconn.Impairments{Seed: 1})
			n.SetFilter(nil)
		}
	})
	next := make([]int, senders)
	msgs := buffers(64, 64)
	for got := 0; got < senders*perSender; {
		k, err := dst.Recv(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:k] {
			var s, i int
			fmt.Sscanf(string(m.Buf[:m.N]), "%d %d", &s, &i)
			if i != next[s] || m.Addr.Port() != uint16(1000+s) {
				t.Fatalf("from %v: datagram %d of sender %d, want %d", m.Addr, i, s, next[s])
			}
			next[s]++
		}
		got += k
	}
	close(stop)
	wg.Wait()
	if s := n.Stats(); s.Sent != senders*perSender || s.Delivered != s.Sent || s.Dropped.Total() != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestZeroAllocs(t *testing.T) {
	leakcheck.Check(t)
	_, a, b := pair(t, memconn.Options{})
	send := batch(addrB, 64, 1100)
	recv := buffers(64, 2048)
	roundTrip(t, a, b, send, recv) // fill the pool
	allocs := testing.AllocsPerRun(100, func() { roundTrip(t, a, b, send, recv) })
	if allocs != 0 {
		t.Errorf("Send+Recv of %d datagrams: %v allocations, want 0", len(send), allocs)
	}
}

func roundTrip(t testing.TB, a, b *memconn.Bind, send, recv []conn.Message) {
	if k, err := a.Send(send); k != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", k, err)
	}
	for got := 0; got < len(recv); {
		k, err := b.Recv(recv[got:])
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		got += k
	}
}

// BenchmarkBatch moves a batch of 64 1100-byte datagrams through the
// fabric per iteration (a copy in, a copy out).
func BenchmarkBatch(b *testing.B) {
	_, x, y := pair(b, memconn.Options{})
	send := batch(addrB, 64, 1100)
	recv := buffers(64, 2048)
	b.SetBytes(64 * 1100)
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(b, x, y, send, recv)
	}
}
