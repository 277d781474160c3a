package conn

import (
	"github.com/goverbs/goverbs/internal/leakcheck"

	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
)

// Tests only ever bind and send to loopback addresses.
var (
	loop4 = netip.MustParseAddrPort("127.0.0.1:0")
	loop6 = netip.MustParseAddrPort("[::1]:0")
)

func listen(t testing.TB, laddr netip.AddrPort) *UDPBind {
	t.Helper()
	return listenWith(t, laddr, UDPOptions{})
}

func listenWith(t testing.TB, laddr netip.AddrPort, opts UDPOptions) *UDPBind {
	t.Helper()
	b, err := ListenUDPWith(laddr, opts)
	if err != nil {
		if laddr.Addr().Is6() {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// payload returns datagram i of a test: size bytes that name i.
func payload(i, size int) []byte {
	p := bytes.Repeat([]byte{byte(i)}, size)
	copy(p, fmt.Sprintf("datagram %d", i))
	return p
}

// recvAll receives until want datagrams arrived, failing after a timeout.
func recvAll(t testing.TB, b Bind, msgs []Message, want int) {
	t.Helper()
	got := 0
	done := make(chan error, 1)
	go func() {
		for got < want {
			n, err := b.Recv(msgs[got:want])
			if err != nil {
				done <- err
				return
			}
			got += n
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Recv after %d of %d: %v", got, want, err)
		}
	case <-time.After(5 * time.Second):
		b.Close()
		<-done
		t.Fatalf("received %d of %d datagrams", got, want)
	}
}

func TestUDPRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		laddr netip.AddrPort
	}{{"IPv4", loop4}, {"IPv6", loop6}} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			a, b := listen(t, tc.laddr), listen(t, tc.laddr)
			if got := a.LocalAddr(); got.Addr() != tc.laddr.Addr() || got.Port() == 0 {
				t.Fatalf("LocalAddr = %v, want %v with a port", got, tc.laddr.Addr())
			}
			// More than one batch, of varied sizes including empty.
			const count = udpBatchSize + 9
			send := make([]Message, count)
			for i := range send {
				send[i] = Message{Buf: payload(i, i*37%1500), Addr: b.LocalAddr()}
			}
			if n, err := a.Send(send); n != count || err != nil {
				t.Fatalf("Send = %d, %v; want %d, nil", n, err, count)
			}
			recv := make([]Message, count)
			for i := range recv {
				recv[i].Buf = make([]byte, 2048)
			}
			recvAll(t, b, recv, count)
			for i, m := range recv {
				if !bytes.Equal(m.Buf[:m.N], send[i].Buf) {
					t.Errorf("datagram %d: got %d bytes %q…, want %d", i, m.N, m.Buf[:min(m.N, 12)], len(send[i].Buf))
				}
				if m.Addr != a.LocalAddr() {
					t.Errorf("datagram %d from %v, want %v", i, m.Addr, a.LocalAddr())
				}
				if m.HasIPID {
					t.Errorf("datagram %d: HasIPID set on a UDP socket", i)
				}
			}
			// And back, to the source address Recv reported.
			reply := []Message{{Buf: []byte("reply"), Addr: recv[0].Addr}}
			if n, err := b.Send(reply); n != 1 || err != nil {
				t.Fatalf("reply Send = %d, %v", n, err)
			}
			recvAll(t, a, recv[:1], 1)
			if got := string(recv[0].Buf[:recv[0].N]); got != "reply" || recv[0].Addr != b.LocalAddr() {
				t.Errorf("reply %q from %v", got, recv[0].Addr)
			}
		})
	}
}

// IPv4-mapped addresses are IPv4: the socket is udp4, LocalAddr and the
// reported sources are plain IPv4, and mapped destinations work.
func TestUDPMappedIsIPv4(t *testing.T) {
	leakcheck.Check(t)
	a := listen(t, netip.MustParseAddrPort("[::ffff:127.0.0.1]:0"))
	if !a.LocalAddr().Addr().Is4() {
		t.Fatalf("LocalAddr = %v, want plain IPv4", a.LocalAddr())
	}
	b := listen(t, loop4)
	dst := netip.AddrPortFrom(netip.AddrFrom16(b.LocalAddr().Addr().As16()), b.LocalAddr().Port())
	if n, err := a.Send([]Message{{Buf: []byte("x"), Addr: dst}}); n != 1 || err != nil {
		t.Fatalf("Send to %v = %d, %v", dst, n, err)
	}
	recv := []Message{{Buf: make([]byte, 64)}}
	recvAll(t, b, recv, 1)
	if recv[0].Addr != a.LocalAddr() {
		t.Errorf("source %v, want %v", recv[0].Addr, a.LocalAddr())
	}
}

func TestUDPSendErrors(t *testing.T) {
	leakcheck.Check(t)
	a := listen(t, loop4)
	b := listen(t, loop4)
	msgs := []Message{
		{Buf: []byte("ok"), Addr: b.LocalAddr()},
		{Buf: []byte("v6"), Addr: netip.MustParseAddrPort("[::1]:4791")},
		{Buf: []byte("never"), Addr: b.LocalAddr()},
	}
	n, err := a.Send(msgs)
	if n != 1 || !errors.Is(err, errAddrFamily) {
		t.Errorf("Send = %d, %v; want 1, %v", n, err, errAddrFamily)
	}
	n, err = a.Send([]Message{{Buf: []byte("x")}})
	if n != 0 || !errors.Is(err, errInvalidAddr) {
		t.Errorf("Send to zero address = %d, %v", n, err)
	}
	recv := []Message{{Buf: make([]byte, 64)}}
	recvAll(t, b, recv, 1)
	if string(recv[0].Buf[:recv[0].N]) != "ok" {
		t.Errorf("got %q", recv[0].Buf[:recv[0].N])
	}
}

// A datagram larger than its buffer is dropped, and the ones after it in
// the same recvmmsg batch move down into the caller's buffers in order.
func TestUDPTruncatedDropped(t *testing.T) {
	leakcheck.Check(t)
	a, b := listen(t, loop4), listen(t, loop4)
	sizes := []int{100, 3000, 200, 3000, 300}
	send := make([]Message, len(sizes))
	for i, s := range sizes {
		send[i] = Message{Buf: payload(i, s), Addr: b.LocalAddr()}
	}
	if n, err := a.Send(send); n != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	recv := make([]Message, 8)
	bufs := make([][]byte, len(recv))
	for i := range recv {
		bufs[i] = make([]byte, 1500)
		recv[i].Buf = bufs[i]
	}
	recvAll(t, b, recv, 3)
	for i, want := range []int{0, 2, 4} {
		if !bytes.Equal(recv[i].Buf[:recv[i].N], send[want].Buf) {
			t.Errorf("message %d: got %d bytes, want datagram %d", i, recv[i].N, want)
		}
		if &recv[i].Buf[0] != &bufs[i][0] {
			t.Errorf("message %d: Recv replaced the caller's buffer", i)
		}
	}
	if got := b.Truncated(); got != 2 {
		t.Errorf("Truncated = %d, want 2", got)
	}
}

func TestUDPCloseUnblocksRecv(t *testing.T) {
	leakcheck.Check(t)
	b := listen(t, loop4)
	closeEndsRecv(t, b, "blocked")
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.Recv([]Message{{Buf: make([]byte, 64)}}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}
	if _, err := b.Send([]Message{{Buf: []byte("x"), Addr: b.LocalAddr()}}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
}

// batchPair sets up a sender and a receiver with count datagrams of size
// bytes to move, for the allocation test and the benchmark.
func batchPair(t testing.TB, laddr netip.AddrPort, count, size int) (a, b *UDPBind, send, recv []Message) {
	return batchPairWith(t, laddr, UDPOptions{}, count, size)
}

func batchPairWith(t testing.TB, laddr netip.AddrPort, opts UDPOptions, count, size int) (a, b *UDPBind, send, recv []Message) {
	a, b = listenWith(t, laddr, opts), listenWith(t, laddr, opts)
	send = make([]Message, count)
	recv = make([]Message, count)
	for i := range send {
		send[i] = Message{Buf: payload(i, size), Addr: b.LocalAddr()}
		recv[i].Buf = make([]byte, 2048)
	}
	return a, b, send, recv
}

// roundTrip sends the batch and receives it whole on the caller's
// goroutine: on loopback sendmmsg has queued every datagram on the
// receiving socket by the time it returns.
func roundTrip(t testing.TB, a, b *UDPBind, send, recv []Message) {
	if n, err := a.Send(send); n != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	for got := 0; got < len(recv); {
		n, err := b.Recv(recv[got:])
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		got += n
	}
}

func TestUDPZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts need a build without the race detector")
	}
	for _, tc := range []struct {
		name  string
		laddr netip.AddrPort
	}{{"IPv4", loop4}, {"IPv6", loop6}} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			a, b, send, recv := batchPair(t, tc.laddr, udpBatchSize, 1100)
			roundTrip(t, a, b, send, recv) // warm up scratch and pools
			allocs := testing.AllocsPerRun(100, func() { roundTrip(t, a, b, send, recv) })
			if allocs != 0 {
				t.Errorf("Send+Recv of %d datagrams: %v allocations, want 0", len(send), allocs)
			}
		})
	}
}

// BenchmarkUDPBatch moves a batch of 64 1100-byte datagrams over
// loopback per iteration: one sendmmsg and (usually) one recvmmsg.
func BenchmarkUDPBatch(b *testing.B) {
	for _, tc := range []struct {
		name  string
		laddr netip.AddrPort
	}{{"IPv4", loop4}, {"IPv6", loop6}} {
		b.Run(tc.name, func(b *testing.B) {
			x, y, send, recv := batchPair(b, tc.laddr, 64, 1100)
			b.SetBytes(64 * 1100)
			b.ReportAllocs()
			for b.Loop() {
				roundTrip(b, x, y, send, recv)
			}
		})
	}
}

// TestUDPBusyPoll: a datagram that arrives while Recv polls is delivered,
// so is one that arrives after the polling gave way to the poller, in
// event mode and in the adaptive default, and Close ends a Recv in the
// middle of its polling.
func TestUDPBusyPoll(t *testing.T) {
	leakcheck.Check(t)
	a, b := listen(t, loop4), listen(t, loop4)
	recvLater := func(after time.Duration) (Message, error) {
		go func() {
			time.Sleep(after)
			a.Send([]Message{{Buf: []byte("late"), Addr: b.LocalAddr()}})
		}()
		msgs := []Message{{Buf: make([]byte, 64)}}
		_, err := b.Recv(msgs)
		return msgs[0], err
	}
	// Longer than the test waits, shorter than a hung test run.
	const long = 30 * time.Second
	b.SetBusyPoll(long)
	if m, err := recvLater(20 * time.Millisecond); err != nil || string(m.Buf[:m.N]) != "late" {
		t.Fatalf("while polling: %q, %v", m.Buf[:m.N], err)
	}
	b.SetBusyPoll(time.Millisecond)
	if m, err := recvLater(50 * time.Millisecond); err != nil || string(m.Buf[:m.N]) != "late" {
		t.Fatalf("after polling: %q, %v", m.Buf[:m.N], err)
	}
	b.SetBusyPoll(-1)
	if m, err := recvLater(20 * time.Millisecond); err != nil || string(m.Buf[:m.N]) != "late" {
		t.Fatalf("event mode: %q, %v", m.Buf[:m.N], err)
	}
	b.SetBusyPoll(0)
	if m, err := recvLater(time.Millisecond); err != nil || string(m.Buf[:m.N]) != "late" {
		t.Fatalf("adaptive: %q, %v", m.Buf[:m.N], err)
	}
	b.SetBusyPoll(long)
	closeEndsRecv(t, b, "polling")
}

// closeEndsRecv closes b while a Recv waits on it, as a blocked or a
// polling one (what), and checks that the Recv returns net.ErrClosed.
func closeEndsRecv(t *testing.T, b *UDPBind, what string) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := b.Recv([]Message{{Buf: make([]byte, 64)}})
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it start waiting
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s Recv returned %v, want net.ErrClosed", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Close did not end a %s Recv", what)
	}
}

// A datagram given in parts (Buf, Body, Tail, any of them empty) arrives
// whole, sent alone or in a coalesced run whose datagrams are cut into
// parts at different places, with segmentation offload on and off.
func TestUDPSendParts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		laddr netip.AddrPort
		opts  UDPOptions
	}{{"IPv4", loop4, UDPOptions{}}, {"IPv4/no-offload", loop4, UDPOptions{NoOffload: true}}, {"IPv6", loop6, UDPOptions{}}} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			a, b := listenWith(t, tc.laddr, tc.opts), listenWith(t, tc.laddr, tc.opts)
			// Twelve equal datagrams (one run when coalescing), a shorter
			// one that ends the run, and lone ones of other sizes.
			var whole [][]byte
			for i := range 12 {
				whole = append(whole, payload(i, 1200))
			}
			whole = append(whole, payload(12, 700), payload(13, 1500), payload(14, 1))
			send := make([]Message, len(whole))
			for i, d := range whole {
				// Cut at i-dependent places: empty head, empty body, empty tail.
				tail := max(len(d)-i%3*5, 0)
				head := min(i%4*7, tail)
				send[i] = Message{Buf: d[:head], Body: d[head:tail], Tail: d[tail:], Addr: b.LocalAddr()}
			}
			a.PlanIPIDs(send)
			if n, err := a.Send(send); n != len(send) || err != nil {
				t.Fatalf("Send = %d, %v; want %d, nil", n, err, len(send))
			}
			recv := make([]Message, len(send))
			for i := range recv {
				recv[i].Buf = make([]byte, 2048)
			}
			recvAll(t, b, recv, len(recv))
			for i, m := range recv {
				if !bytes.Equal(m.Buf[:m.N], whole[i]) {
					t.Errorf("datagram %d: got %d bytes %q…, want %d", i, m.N, m.Buf[:min(m.N, 12)], len(whole[i]))
				}
			}
		})
	}
}

// Size and AppendDatagram see a message's parts as one datagram.
func TestMessageParts(t *testing.T) {
	m := Message{Buf: []byte("head|"), Body: []byte("body|"), Tail: []byte("tail")}
	if got := string(m.AppendDatagram([]byte(">"))); got != ">head|body|tail" || m.Size() != 14 {
		t.Errorf("AppendDatagram = %q, Size = %d; want %q, 14", got, m.Size(), ">head|body|tail")
	}
}
