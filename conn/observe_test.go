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
	send := []Message{{Buf: []byte("ping 1"), Addr: b.LocalAddr()}, {Buf: []byte("ping 2"), Addr: b.LocalAddr(), IPID: 7, HasIPID: true}}
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
		fmt.Sprintf("sent %v→%v %q id=false/0", a.LocalAddr(), b.LocalAddr(), "ping 1"),
		fmt.Sprintf("sent %v→%v %q id=true/7", a.LocalAddr(), b.LocalAddr(), "ping 2"),
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
