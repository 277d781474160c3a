package conn

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
)

// logObserver records what it saw as text: direction, local address,
// peer and bytes.
type logObserver struct{ log []string }

func (o *logObserver) Sent(local netip.AddrPort, msgs []Message) {
	for _, m := range msgs {
		o.log = append(o.log, fmt.Sprintf("sent %v→%v %q id=%v/%d", local, m.Addr, m.Buf, m.HasIPID, m.IPID))
	}
}

func (o *logObserver) Received(local netip.AddrPort, msgs []Message) {
	for _, m := range msgs {
		o.log = append(o.log, fmt.Sprintf("recv %v←%v %q", local, m.Addr, m.Buf[:m.N]))
	}
}

// TestObserve: an observed bind carries datagrams unchanged and shows the
// observer each one sent and received, with the bind's local address, in
// the order they happened; the IP ID a sender gives is passed on.
func TestObserve(t *testing.T) {
	a, b := listen(t, loop4), listen(t, loop4)
	var o logObserver
	oa := Observe(a, &o)
	if oa.LocalAddr() != a.LocalAddr() || oa.BatchSize() != a.BatchSize() {
		t.Fatalf("observed bind: %v batch %d, inner %v batch %d", oa.LocalAddr(), oa.BatchSize(), a.LocalAddr(), a.BatchSize())
	}
	// The link may coalesce these two (GSO): the plan says which IDs
	// they get on the wire, and the observer must see those.
	send := []Message{{Buf: []byte("ping 1"), Addr: b.LocalAddr()}, {Buf: []byte("ping 2"), Addr: b.LocalAddr()}}
	oa.(IPIDPlanner).PlanIPIDs(send)
	if n, err := oa.Send(send); n != 2 || err != nil {
		t.Fatalf("Send: %d, %v", n, err)
	}
	in := []Message{{Buf: make([]byte, 64)}, {Buf: make([]byte, 64)}}
	recvAll(t, b, in, 2)
	for i := range in {
		if !bytes.Equal(in[i].Buf[:in[i].N], send[i].Buf) {
			t.Errorf("datagram %d arrived as %q, sent %q", i, in[i].Buf[:in[i].N], send[i].Buf)
		}
	}
	if n, err := b.Send([]Message{{Buf: []byte("pong"), Addr: a.LocalAddr()}}); n != 1 || err != nil {
		t.Fatalf("reply: %d, %v", n, err)
	}
	recvAll(t, oa, in, 1)
	want := []string{
		fmt.Sprintf("sent %v→%v %q id=true/%d", a.LocalAddr(), b.LocalAddr(), "ping 1", send[0].IPID),
		fmt.Sprintf("sent %v→%v %q id=true/%d", a.LocalAddr(), b.LocalAddr(), "ping 2", send[1].IPID),
		fmt.Sprintf("recv %v←%v %q", a.LocalAddr(), b.LocalAddr(), "pong"),
	}
	if fmt.Sprint(o.log) != fmt.Sprint(want) {
		t.Errorf("observed\n%q\nwant\n%q", o.log, want)
	}
	oa.Close()
	if _, err := a.Send(send[:1]); err == nil {
		t.Error("closing the observed bind left the inner bind open")
	}
}

// planCounter is a Bind that plans IPv4 IDs, counting the calls.
type planCounter struct {
	Bind
	plans int
}

func (p *planCounter) PlanIPIDs(msgs []Message) {
	p.plans++
	for i := range msgs {
		msgs[i].IPID, msgs[i].HasIPID = uint16(i), true
	}
}

// TestObservePlanner: observing a link that plans IPv4 IDs (GSO) keeps the
// plans, so capture does not turn coalescing off; observing one that does
// not plan adds no planner.
func TestObservePlanner(t *testing.T) {
	inner := &planCounter{Bind: listen(t, loop4)}
	ob := Observe(inner, &logObserver{})
	p, ok := ob.(IPIDPlanner)
	if !ok {
		t.Fatal("observed planner: not an IPIDPlanner")
	}
	msgs := make([]Message, 3)
	p.PlanIPIDs(msgs)
	if inner.plans != 1 || msgs[2].IPID != 2 || !msgs[2].HasIPID {
		t.Errorf("PlanIPIDs reached the link %d times, msgs[2] = %+v", inner.plans, msgs[2])
	}
	if _, ok := Observe(struct{ Bind }{listen(t, loop4)}, &logObserver{}).(IPIDPlanner); ok {
		t.Error("observed non-planner claims to plan IPv4 IDs")
	}
}
