package verbs_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/leakcheck"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// incarnation is a device with one RC QP and a 4 KiB region, on addr of net.
type incarnation struct {
	dev *verbs.Device
	cq  *verbs.CQ
	qp  *verbs.QP
	mr  *verbs.MR
}

func newIncarnation(tb testing.TB, net *memconn.Network, addr string) *incarnation {
	tb.Helper()
	b, err := net.Listen(netip.MustParseAddrPort(addr))
	if err != nil {
		tb.Fatal(err)
	}
	e := &incarnation{}
	if e.dev, err = verbs.OpenDevice(verbs.DeviceConfig{Bind: b}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.dev.Close() })
	return e.another(tb)
}

// another returns an incarnation with a new QP, CQ and region on e's device.
func (e *incarnation) another(tb testing.TB) *incarnation {
	tb.Helper()
	pd, err := e.dev.AllocPD()
	if err != nil {
		tb.Fatal(err)
	}
	n := &incarnation{dev: e.dev}
	if n.cq, err = e.dev.CreateCQ(256); err != nil {
		tb.Fatal(err)
	}
	if n.qp, err = pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: n.cq, RecvCQ: n.cq,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		tb.Fatal(err)
	}
	if n.mr, err = pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite); err != nil {
		tb.Fatal(err)
	}
	return n
}

func connectEnds(tb testing.TB, a, b *incarnation, o verbs.ConnectOptions) {
	tb.Helper()
	if err := a.qp.ConnectRC(0x100, b.qp.Endpoint(0x200), o); err != nil {
		tb.Fatal(err)
	}
	if err := b.qp.ConnectRC(0x200, a.qp.Endpoint(0x100), o); err != nil {
		tb.Fatal(err)
	}
}

func write(tb testing.TB, from, to *incarnation, n int, wrid uint64) {
	tb.Helper()
	post(tb, from.qp, &verbs.SendWR{WRID: wrid, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{from.mr.SGE(0, n)}, RemoteAddr: to.mr.Addr(), RKey: to.mr.RKey()})
}

// TestRestartedPeerIgnoresStrays is issue 11's killed-and-restarted
// process on the in-memory fabric: device B dies while A's QP still has
// WRITEs for it, and a new device comes up on B's address with a new QP
// that A talks to through a second QP. A's old QP retransmits into the
// new device, which drops those packets as for an unknown QP (its QP
// numbers start at another random base, doc/protocol.md §1.5): they
// reach no live QP, and the new connection sees no NAK and no sequence
// error, and its data lands.
func TestRestartedPeerIgnoresStrays(t *testing.T) {
	leakcheck.Check(t)
	net := memconn.NewNetwork(memconn.Options{})
	a := newIncarnation(t, net, "10.0.0.1:4791")
	b := newIncarnation(t, net, "10.0.0.2:4791")
	o := verbs.DefaultConnectOptions()
	o.Timeout = 10 // 4 ms: eight sends of the stray WRITEs in about 35 ms
	connectEnds(t, a, b, o)
	write(t, a, b, 64, 1)
	verbstest.MustPoll(t, a.cq, 1)

	oldQPN := b.qp.QPN()
	b.dev.Close() // the process dies
	b2 := newIncarnation(t, net, "10.0.0.2:4791")
	if b2.qp.QPN() == oldQPN {
		t.Fatalf("the new device numbered its first QP %#x again", oldQPN)
	}
	a2 := a.another(t)
	connectEnds(t, a2, b2, verbs.DefaultConnectOptions())
	before := a.dev.Counters()

	for i := range 4 { // strays: A's old QP retries them into b2's device
		write(t, a, b, 1024, uint64(10+i))
	}
	for i := range 100 {
		src := a2.mr.Bytes()[:4096]
		for j := range src {
			src[j] = byte(i + j)
		}
		write(t, a2, b2, 4096, uint64(100+i))
		if wc := verbstest.MustPoll(t, a2.cq, 1)[0]; wc.Status != verbs.WCSuccess {
			t.Fatalf("WRITE %d of the new connection: %v", i, wc.Status)
		}
		if !bytes.Equal(b2.mr.Bytes(), src) {
			t.Fatalf("WRITE %d of the new connection did not land", i)
		}
	}
	for _, wc := range verbstest.MustPoll(t, a.cq, 4) {
		if wc.Status != verbs.WCRetryExcErr && wc.Status != verbs.WCWRFlushErr {
			t.Errorf("stray WRITE %d: %v, want RETRY_EXC_ERR (or flushed after it)", wc.WRID, wc.Status)
		}
	}
	after, c2 := a.dev.Counters(), b2.dev.Counters()
	if c2.Get(verbs.DropUnknownQP) == 0 {
		t.Error("no stray reached the new device: the test tested nothing")
	}
	for _, c := range []verbs.Counter{verbs.RcvdSeqErr, verbs.NAKRcvd} {
		if d := after.Get(c) - before.Get(c); d != 0 {
			t.Errorf("A's %v +%d: a stray disturbed the new connection", c, d)
		}
	}
	// A duplicate at b2 can only be a2's own: a tail probe (doc/protocol.md
	// §8.6) a loaded host's late ACK drew; a stray would need b2's QPN.
	if n := c2.Get(verbs.NAKSent) + c2.Get(verbs.OutOfSeqRequest); n != 0 {
		t.Errorf("the new device NAKed or took as out of sequence %d packets", n)
	}
	t.Logf("strays dropped as for an unknown QP: %d", c2.Get(verbs.DropUnknownQP))
}
