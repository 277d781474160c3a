package conn

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/internal/leakcheck"
	"golang.org/x/sys/unix"
)

// flowBind listens on the RoCEv2 port of a loopback address the test has
// to itself: flows open only there (other packages' tests, which go test
// may run at the same time, use 127.0.0.x and 127.0.3.x).
func flowBind(t *testing.T, addr string) *UDPBind {
	t.Helper()
	return listenWith(t, netip.AddrPortFrom(netip.MustParseAddr(addr), RoCEv2Port), UDPOptions{})
}

// flowTo opens a flow from a to b, failing the test if a declines.
func flowTo(t *testing.T, a, b *UDPBind) int {
	t.Helper()
	fl, _ := a.OpenFlow(b.LocalAddr())
	if fl == 0 {
		t.Fatal("OpenFlow declined on the RoCEv2 port")
	}
	return fl
}

// checkCount probes flow fl of a and fails unless the kernel gave the
// probe the ID the flow counted on for its next datagram.
func checkCount(t *testing.T, a *UDPBind, fl int) {
	t.Helper()
	f := a.fl.get(fl)
	want := uint16(f.next.Load())
	got, err := a.probe(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the kernel gave a probe ID %d; the flow counted on %d", got, want)
	}
	f.next.Store(uint32(got + 1))
}

// TestFlowSends: a flow sends from a port of its own on the bind's
// address, in lone datagrams and GSO runs mixed with datagrams that go
// from the bind's socket; everything arrives intact and in order, and the
// kernel numbered the flow's datagrams as the flow counted.
func TestFlowSends(t *testing.T) {
	leakcheck.Check(t)
	a := flowBind(t, "127.0.9.1")
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.2:0"), UDPOptions{})
	c := listenWith(t, netip.MustParseAddrPort("127.0.9.3:0"), UDPOptions{NoOffload: true})
	fl, src := a.OpenFlow(b.LocalAddr())
	if fl == 0 {
		t.Fatal("OpenFlow declined on the RoCEv2 port")
	}
	if src.Addr() != a.LocalAddr().Addr() || src.Port() == RoCEv2Port || src.Port() == 0 {
		t.Fatalf("flow source %v, bind %v", src, a.LocalAddr())
	}
	if again, src2 := a.OpenFlow(b.LocalAddr()); again != fl || src2 != src {
		t.Errorf("second OpenFlow = %d %v, want %d %v", again, src2, fl, src)
	}
	if other, _ := a.OpenFlow(c.LocalAddr()); other == 0 || other == fl {
		t.Errorf("flow to another peer = %d (first %d)", other, fl)
	}
	send := gsoBatch(b.LocalAddr(), c.LocalAddr())
	var toB []int
	for i := range send {
		if send[i].Addr == b.LocalAddr() {
			send[i].Flow = fl
			toB = append(toB, i)
		}
	}
	first := uint16(a.fl.get(fl).next.Load())
	a.PlanIPIDs(send)
	if send[0].IPID != first || send[1].IPID != first+1 {
		t.Errorf("planned IDs %d, %d; the flow's next is %d", send[0].IPID, send[1].IPID, first)
	}
	if n, err := a.Send(send); n != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	recv := make([]Message, len(toB))
	for i := range recv {
		recv[i].Buf = make([]byte, 5000)
	}
	recvAll(t, b, recv, len(recv))
	for k, i := range toB {
		if m := &recv[k]; !bytes.Equal(m.Buf[:m.N], send[i].Buf) || m.Addr != src {
			t.Fatalf("message %d: %d bytes from %v, want datagram %d (%d bytes) from %v", k, m.N, m.Addr, i, len(send[i].Buf), src)
		}
	}
	other := []Message{{Buf: make([]byte, 5000)}}
	recvAll(t, c, other, 1)
	if other[0].Addr != a.LocalAddr() {
		t.Errorf("the datagram without a flow came from %v, want %v", other[0].Addr, a.LocalAddr())
	}
	checkCount(t, a, fl)
}

// TestFlowPlanOutOfDate: a plan that another send by the flow overtook is
// refused whole (ErrReplan) and holds once made again; a flow whose count
// went stale probes before its next send, which refuses the plan made for
// the old count.
func TestFlowPlanOutOfDate(t *testing.T) {
	leakcheck.Check(t)
	a := flowBind(t, "127.0.9.4")
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.5:0"), UDPOptions{})
	fl := flowTo(t, a, b)
	batch := func(from int) []Message {
		msgs := make([]Message, 3)
		for i := range msgs { // growing sizes: each datagram goes alone
			msgs[i] = Message{Buf: payload(from+i, 100*(i+1)), Addr: b.LocalAddr(), Flow: fl}
		}
		return msgs
	}
	send := func(msgs []Message, want error) {
		t.Helper()
		n, err := a.Send(msgs)
		if !errors.Is(err, want) || (want == nil) != (n == len(msgs)) {
			t.Fatalf("Send = %d, %v; want error %v", n, err, want)
		}
	}
	msgs, cut := batch(0), batch(3)[:1]
	a.PlanIPIDs(msgs)
	a.PlanIPIDs(cut)
	send(cut, nil)
	send(msgs, ErrReplan)
	a.PlanIPIDs(msgs)
	send(msgs, nil)

	f := a.fl.get(fl)
	f.stale = true
	f.next.Add(1000)
	again := batch(6)
	a.PlanIPIDs(again)
	send(again, ErrReplan)
	if f.stale {
		t.Error("the flow did not probe its stale count")
	}
	a.PlanIPIDs(again)
	send(again, nil)
	checkCount(t, a, fl)

	recv := make([]Message, 7)
	for i := range recv {
		recv[i].Buf = make([]byte, 500)
	}
	recvAll(t, b, recv, len(recv))
	for k, i := range []int{3, 0, 1, 2, 6, 7, 8} {
		if m := &recv[k]; !bytes.Equal(m.Buf[:m.N], payload(i, 100*(i%3+1))) {
			t.Errorf("message %d: %d bytes, want datagram %d", k, m.N, i)
		}
	}
}

// TestFlowRecheck: a datagram the kernel numbers behind the flow's back
// (here one written to its socket directly; in life one that a local
// queue dropped, with an ENOBUFS UDP keeps to itself) leaves the count
// one short; RecheckFlow has the flow probe before its next send, which
// refuses the plan made for the old count, and the plan made again holds.
// Rechecking no flow, or one that is not open, does nothing.
func TestFlowRecheck(t *testing.T) {
	leakcheck.Check(t)
	a := flowBind(t, "127.0.9.10")
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.11:0"), UDPOptions{})
	fl := flowTo(t, a, b)
	f := a.fl.get(fl)
	counted := uint16(f.next.Load())
	if _, err := unix.Write(f.fd, payload(0, 100)); err != nil {
		t.Fatal(err)
	}
	a.RecheckFlow(0)
	a.RecheckFlow(fl + 1)
	if f.stale {
		t.Fatal("rechecking another flow marked this one")
	}
	a.RecheckFlow(fl)
	msgs := []Message{{Buf: payload(1, 200), Addr: b.LocalAddr(), Flow: fl}}
	a.PlanIPIDs(msgs)
	if msgs[0].IPID != counted {
		t.Fatalf("planned ID %d before the recheck's probe, want the count %d", msgs[0].IPID, counted)
	}
	if n, err := a.Send(msgs); n != 0 || !errors.Is(err, ErrReplan) {
		t.Fatalf("Send of the plan made for the old count = %d, %v; want 0, ErrReplan", n, err)
	}
	a.PlanIPIDs(msgs)
	// The datagram behind its back took the counted ID, the probe the next.
	if want := counted + 2; msgs[0].IPID != want {
		t.Errorf("planned ID %d after the recheck, want %d", msgs[0].IPID, want)
	}
	if n, err := a.Send(msgs); n != 1 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkCount(t, a, fl)
	recv := make([]Message, 2)
	for i := range recv {
		recv[i].Buf = make([]byte, 500)
	}
	recvAll(t, b, recv, len(recv))
	for k, want := range [][]byte{payload(0, 100), payload(1, 200)} {
		if m := &recv[k]; !bytes.Equal(m.Buf[:m.N], want) {
			t.Errorf("datagram %d: %d bytes, want %d", k, m.N, len(want))
		}
	}
}

// TestFlowPeriodicRecheck: a flow probes again after recheckSends sends
// even when none failed, so that a count one datagram behind the kernel's
// (one written to the flow's socket behind its back) is put right
// without any caller asking.
func TestFlowPeriodicRecheck(t *testing.T) {
	leakcheck.Check(t)
	defer func(n uint32) { recheckSends = n }(recheckSends)
	recheckSends = 4
	a := flowBind(t, "127.0.9.17")
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.18:0"), UDPOptions{})
	fl := flowTo(t, a, b)
	f := a.fl.get(fl)
	if _, err := unix.Write(f.fd, payload(0, 100)); err != nil {
		t.Fatal(err)
	}
	sends := 0
	for i := range int(recheckSends) + 1 {
		msgs := []Message{{Buf: payload(1+i, 200), Addr: b.LocalAddr(), Flow: fl}}
		for {
			a.PlanIPIDs(msgs)
			n, err := a.Send(msgs)
			if errors.Is(err, ErrReplan) {
				continue // the periodic probe moved the count
			}
			if n != 1 || err != nil {
				t.Fatalf("Send %d = %d, %v", i, n, err)
			}
			break
		}
		sends++
	}
	if f.stale || f.sends != 1 {
		t.Errorf("after %d sends: stale %v, %d sends since a probe; want a probe before the last", sends, f.stale, f.sends)
	}
	checkCount(t, a, fl)
	recv := make([]Message, sends+1)
	for i := range recv {
		recv[i].Buf = make([]byte, 500)
	}
	recvAll(t, b, recv, len(recv))
	for k := range recv {
		want := payload(0, 100)
		if k > 0 {
			want = payload(k, 200)
		}
		if m := &recv[k]; !bytes.Equal(m.Buf[:m.N], want) {
			t.Errorf("datagram %d: %d bytes, want %d", k, m.N, len(want))
		}
	}
}

// TestFlowDeclined: no flow for a bind on another port than RoCEv2's,
// where peers know the device by its port, nor to an address of the other
// family; a send by a flow that is not open fails.
func TestFlowDeclined(t *testing.T) {
	leakcheck.Check(t)
	a := listenWith(t, netip.MustParseAddrPort("127.0.9.6:0"), UDPOptions{})
	b := flowBind(t, "127.0.9.7")
	if fl, src := a.OpenFlow(b.LocalAddr()); fl != 0 || src != a.LocalAddr() {
		t.Errorf("OpenFlow on an ephemeral port = %d %v", fl, src)
	}
	if fl, src := b.OpenFlow(netip.MustParseAddrPort("[::1]:4791")); fl != 0 || src != b.LocalAddr() {
		t.Errorf("OpenFlow to IPv6 from IPv4 = %d %v", fl, src)
	}
	m := []Message{{Buf: payload(0, 50), Addr: a.LocalAddr(), Flow: 3, HasIPID: true}}
	if n, err := b.Send(m); n != 0 || !errors.Is(err, errNoFlow) {
		t.Errorf("Send by a flow not open = %d, %v", n, err)
	}
}

// TestFlowZeroAllocs: planning and sending by a flow allocate nothing.
func TestFlowZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts need a build without the race detector")
	}
	leakcheck.Check(t)
	a := flowBind(t, "127.0.9.8")
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.9:0"), UDPOptions{})
	fl := flowTo(t, a, b)
	send := make([]Message, 8)
	recv := make([]Message, 8)
	for i := range send {
		send[i] = Message{Buf: payload(i, 1000), Addr: b.LocalAddr(), Flow: fl}
		recv[i].Buf = make([]byte, 2048)
	}
	trip := func() {
		a.PlanIPIDs(send)
		roundTrip(t, a, b, send, recv)
	}
	trip()
	if allocs := testing.AllocsPerRun(100, trip); allocs != 0 {
		t.Errorf("PlanIPIDs+Send+Recv by a flow: %v allocations, want 0", allocs)
	}
	// A flow that probes before every send (recheckSends 1): the plan is
	// refused once, then holds.
	defer func(n uint32) { recheckSends = n }(recheckSends)
	recheckSends = 1
	trip() // due a probe from here on
	probed := func() {
		a.PlanIPIDs(send)
		if n, err := a.Send(send); !errors.Is(err, ErrReplan) || n != 0 {
			t.Fatalf("Send with a probe due = %d, %v; want 0, ErrReplan", n, err)
		}
		trip()
	}
	probed()
	if allocs := testing.AllocsPerRun(100, probed); allocs != 0 {
		t.Errorf("a probe, then PlanIPIDs+Send+Recv by a flow: %v allocations, want 0", allocs)
	}
}
