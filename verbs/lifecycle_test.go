package verbs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/leakcheck"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// objects is one of everything on a device: a PD with an MR and a QP on
// one CQ, and a Buffer.
type objects struct {
	dev *verbs.Device
	pd  *verbs.PD
	mr  *verbs.MR
	cq  *verbs.CQ
	qp  *verbs.QP
	buf *verbs.Buffer
}

// openDevice opens a device on an in-memory link, closed when the test
// ends.
func openDevice(t *testing.T) *verbs.Device {
	t.Helper()
	l, err := memconn.NewNetwork(memconn.Options{}).Listen(netip.MustParseAddrPort("10.0.0.1:4791"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := verbs.OpenDevice(verbs.DeviceConfig{Bind: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func newObjects(t *testing.T) *objects {
	t.Helper()
	leakcheck.Check(t)
	o := &objects{dev: openDevice(t)}
	var err error
	must := func() {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	o.pd, err = o.dev.AllocPD()
	must()
	o.buf, err = verbs.AllocBuffer(4096)
	must()
	t.Cleanup(func() { o.buf.Close() })
	o.mr, err = o.pd.RegMR(o.buf.Bytes(), verbs.AccessLocalWrite)
	must()
	o.cq, err = o.dev.CreateCQ(16)
	must()
	o.qp, err = o.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, RecvCQ: o.cq,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	must()
	return o
}

// wantErr fails unless err wraps target and tells the verb.
func wantErr(t *testing.T, what string, err, target error, verb string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: %v, want %v", what, err, target)
	} else if !strings.HasPrefix(err.Error(), "verbs: "+verb+": ") {
		t.Errorf("%s: %q does not start with %q", what, err, "verbs: "+verb+": ")
	}
}

// TestCloseBusy: as in libibverbs, a PD with MRs or QPs and a CQ with QPs
// refuse to close (EBUSY), and close once those are gone, in any order.
func TestCloseBusy(t *testing.T) {
	o := newObjects(t)
	wantErr(t, "close PD with an MR and a QP", o.pd.Close(), verbs.ErrBusy, "close PD")
	err := o.cq.Close()
	wantErr(t, "close CQ with a QP", err, verbs.ErrBusy, "destroy CQ")
	if err != nil && !strings.HasSuffix(err.Error(), "QPs complete into it (2 send and receive queues; close the QPs first)") {
		t.Errorf("close CQ with a QP: %q does not say what uses it", err)
	}
	if err := o.qp.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "close PD with an MR", o.pd.Close(), verbs.ErrBusy, "close PD")
	if err := o.cq.Close(); err != nil {
		t.Errorf("close CQ after its QP: %v", err)
	}
	if err := o.mr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.pd.Close(); err != nil {
		t.Errorf("close PD after its MR and QP: %v", err)
	}
}

// TestDoubleClose: closing any object twice is harmless.
func TestDoubleClose(t *testing.T) {
	o := newObjects(t)
	for _, c := range []struct {
		name string
		obj  interface{ Close() error }
	}{{"QP", o.qp}, {"MR", o.mr}, {"CQ", o.cq}, {"PD", o.pd}, {"Buffer", o.buf}, {"Device", o.dev}} {
		for i := range 2 {
			if err := c.obj.Close(); err != nil {
				t.Errorf("%s close %d: %v", c.name, i+1, err)
			}
		}
	}
}

// TestUseAfterClose: every verb on a closed object fails with ErrClosed
// and says which verb failed; none panics or silently does nothing.
func TestUseAfterClose(t *testing.T) {
	o := newObjects(t)
	sge := o.mr.SGE(0, 8)
	toInit(t, o.qp)
	for _, c := range []io.Closer{o.qp, o.mr, o.cq, o.pd} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var post *verbs.PostError
	err := o.qp.PostRecv(&verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{sge}})
	if !errors.As(err, &post) || !errors.Is(err, verbs.ErrClosed) || post.Index != 0 {
		t.Errorf("post recv on a closed QP: %v", err)
	}
	if err := o.qp.PostSend(&verbs.SendWR{WRID: 1, Opcode: verbs.WRSend}); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("post send on a closed QP: %v", err)
	}
	wantErr(t, "modify a closed QP", o.qp.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState), verbs.ErrClosed, "modify QP")
	_, err = o.qp.Query()
	wantErr(t, "query a closed QP", err, verbs.ErrClosed, "query QP")
	if s := o.mr.SGE(0, 8); s != (verbs.SGE{}) {
		t.Errorf("SGE of a closed MR: %+v, want the zero SGE", s)
	}
	_, err = o.cq.Poll(make([]verbs.WC, 1))
	wantErr(t, "poll a closed CQ", err, verbs.ErrClosed, "poll CQ")
	_, err = o.cq.Wait(context.Background(), make([]verbs.WC, 1))
	wantErr(t, "wait on a closed CQ", err, verbs.ErrClosed, "wait CQ")
	wantErr(t, "resize a closed CQ", o.cq.Resize(32), verbs.ErrClosed, "resize CQ")
	_, err = o.pd.RegMR(make([]byte, 8), verbs.AccessLocalWrite)
	wantErr(t, "reg MR in a closed PD", err, verbs.ErrClosed, "reg MR")
	cq, err := o.dev.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	wantErr(t, "create QP in a closed PD", err, verbs.ErrClosed, "create QP")
	pd, err := o.dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	_, err = pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	wantErr(t, "create QP on a closed CQ", err, verbs.ErrClosed, "create QP")
	if b := o.buf.Close(); b != nil || o.buf.Bytes() != nil || o.buf.Fd() != -1 {
		t.Errorf("closed Buffer: close %v, %d bytes, fd %d", b, len(o.buf.Bytes()), o.buf.Fd())
	}
}

// TestUseAfterDeviceClose: a closed device's port is down and it creates
// nothing, and its objects fail with ErrClosed but still close.
func TestUseAfterDeviceClose(t *testing.T) {
	o := newObjects(t)
	if err := o.dev.Close(); err != nil {
		t.Fatal(err)
	}
	if p, err := o.dev.QueryPort(1); err != nil || p.State != verbs.PortDown {
		t.Errorf("port of a closed device: %v, %v; want PORT_DOWN", p.State, err)
	}
	_, err := o.dev.AllocPD()
	wantErr(t, "alloc PD", err, verbs.ErrClosed, "alloc PD")
	_, err = o.dev.CreateCQ(4)
	wantErr(t, "create CQ", err, verbs.ErrClosed, "create CQ")
	_, err = o.pd.RegMR(make([]byte, 8), verbs.AccessLocalWrite)
	wantErr(t, "reg MR", err, verbs.ErrClosed, "reg MR")
	_, err = o.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, RecvCQ: o.cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	wantErr(t, "create QP", err, verbs.ErrClosed, "create QP")
	if err := o.qp.PostRecv(&verbs.RecvWR{WRID: 1}); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("post recv: %v", err)
	}
	wantErr(t, "modify QP", o.qp.Modify(&verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags), verbs.ErrClosed, "modify QP")
	for _, c := range []io.Closer{o.qp, o.mr, o.cq, o.pd} {
		if err := c.Close(); err != nil {
			t.Errorf("close after the device: %v", err)
		}
	}
}

// TestDeviceCloseFlushes: closing a device completes what its QPs hold
// with WR_FLUSH_ERR, as a QP moved to ERR does: a send the peer keeps
// refusing with RNR NAKs and the posted receives. Then its CQ reports
// ErrClosed, to Wait without a deadline too, and posts fail.
func TestDeviceCloseFlushes(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{}) // RNR retry 7: for ever
	local := p.A.Buffer(t, 64, 0)
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{local.SGE(0, 8)}})
	postRecv(t, p.A.QP, &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{local.SGE(8, 8)}})
	postRecv(t, p.A.QP, &verbs.RecvWR{WRID: 3, SGList: []verbs.SGE{local.SGE(16, 8)}})
	for p.B.Dev.Counters().Get(verbs.SendRNRErr) == 0 {
		sleepBriefly()
	}
	if err := p.A.Dev.Close(); err != nil {
		t.Fatal(err)
	}
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.WRID != 1 || wc.Status != verbs.WCWRFlushErr || wc.Opcode != verbs.WCSend {
		t.Errorf("send: %+v, want WR 1 flushed, opcode IBV_WC_SEND", wc)
	}
	for i, wc := range verbstest.MustPoll(t, p.A.RecvCQ, 2) {
		if wc.WRID != uint64(2+i) || wc.Status != verbs.WCWRFlushErr || wc.Opcode != verbs.WCRecv {
			t.Errorf("receive %d: %+v, want WR %d flushed, opcode %v", i, wc, 2+i, verbs.WCRecv)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.A.RecvCQ.Wait(context.Background(), make([]verbs.WC, 1))
		done <- err
	}()
	select {
	case err := <-done:
		wantErr(t, "wait on a drained CQ of a closed device", err, verbs.ErrClosed, "wait CQ")
	case <-time.After(10 * time.Second):
		t.Fatal("Wait on a closed device's CQ did not return")
	}
	if err := p.A.QP.PostSend(&verbs.SendWR{WRID: 4, Opcode: verbs.WRSend}); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("post send after the device closed: %v", err)
	}
}

// TestCreateQPBadArguments: a missing QPInitAttr or CQ, or a CQ of
// another device, is an invalid argument, not a panic.
func TestCreateQPBadArguments(t *testing.T) {
	o := newObjects(t)
	other, err := openDevice(t).CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	c := verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}
	for _, c := range []struct {
		attr *verbs.QPInitAttr
		why  string
	}{
		{nil, "no QPInitAttr"},
		{&verbs.QPInitAttr{Type: verbs.QPTypeRC, RecvCQ: o.cq, Cap: c}, "no send CQ"},
		{&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, Cap: c}, "no receive CQ"},
		{&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: other, RecvCQ: o.cq, Cap: c}, "send CQ belongs to another device"},
		{&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, RecvCQ: other, Cap: c}, "receive CQ belongs to another device"},
		{&verbs.QPInitAttr{SendCQ: o.cq, RecvCQ: o.cq, Cap: c}, "QPInitAttr.Type is not set (RC, UC or UD)"},
	} {
		_, err := o.pd.CreateQP(c.attr)
		wantErr(t, c.why, err, verbs.ErrInvalidArgument, "create QP")
		if err != nil && !strings.HasSuffix(err.Error(), c.why) {
			t.Errorf("%q does not say %q", err, c.why)
		}
	}
	_, err = o.pd.CreateQP(&verbs.QPInitAttr{Type: 8, SendCQ: o.cq, RecvCQ: o.cq, Cap: c}) // IBV_QPT_RAW_PACKET
	wantErr(t, "raw packet QP", err, verbs.ErrNotSupported, "create QP")
	// A capacity out of range is named.
	for _, c := range []struct {
		cap verbs.QPCap
		why string
	}{
		{verbs.QPCap{}, "MaxSendWR 0, must be 1 to 16384"},
		{verbs.QPCap{MaxSendWR: 1}, "MaxRecvWR 0, must be 1 to 16384"},
		{verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxRecvSGE: 33}, "MaxRecvSGE 33, must be 0 to 32"},
		{verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxInlineData: 513}, "MaxInlineData 513, must be 0 to 512"},
	} {
		_, err = o.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: o.cq, RecvCQ: o.cq, Cap: c.cap})
		wantErr(t, c.why, err, verbs.ErrBadCapability, "create QP")
		if err != nil && !strings.HasSuffix(err.Error(), c.why) {
			t.Errorf("%q does not say %q", err, c.why)
		}
	}
	if err := o.qp.Modify(nil, verbs.QPAttrState); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Errorf("modify with nil attributes: %v", err)
	}
}

// TestMRSGEOutOfRange: MR.SGE never yields an address outside its region;
// a bad range gives the zero SGE, which posting refuses with
// ErrInvalidSGE, naming the request of the chain.
func TestMRSGEOutOfRange(t *testing.T) {
	o := newObjects(t)
	n := o.mr.Len()
	for _, r := range [][2]int{{-1, 10}, {0, -1}, {0, n + 1}, {n, 1}, {1, n}, {n - 1, 1 << 62}} {
		if s := o.mr.SGE(r[0], r[1]); s != (verbs.SGE{}) {
			t.Errorf("SGE(%d, %d) of a %d-byte region: %+v, want the zero SGE", r[0], r[1], n, s)
		}
	}
	if s := o.mr.SGE(n, 0); s.LKey != o.mr.LKey() || s.Addr != o.mr.Addr()+uint64(n) {
		t.Errorf("SGE(%d, 0): %+v, want an empty SGE at the end", n, s)
	}
	toInit(t, o.qp)
	err := o.qp.PostRecv(&verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{o.mr.SGE(0, 8)},
		Next: &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{o.mr.SGE(-1, 10)}}})
	var post *verbs.PostError
	if !errors.As(err, &post) || !errors.Is(err, verbs.ErrInvalidSGE) || post.Index != 1 || post.Verb != "post recv" {
		t.Errorf("posting an out-of-range SGE second: %v", err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "verbs: post recv: QP 0x") {
		t.Errorf("%q does not name the verb and QP", err)
	}
}

// TestCQResize: a CQ grows keeping its completions, and refuses to shrink
// below what it holds.
func TestCQResize(t *testing.T) {
	o := newObjects(t)
	toInit(t, o.qp)
	for i := range 3 {
		postRecv(t, o.qp, &verbs.RecvWR{WRID: uint64(i)})
	}
	// Nothing else runs the QP, so Modify itself takes the turn that
	// flushes the three receives into the CQ.
	if err := o.qp.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "shrink below the waiting completions", o.cq.Resize(2), verbs.ErrInvalidArgument, "resize CQ")
	if err := o.cq.Resize(100); err != nil {
		t.Fatal(err)
	}
	if o.cq.Cap() < 100 {
		t.Errorf("capacity %d after resizing to 100", o.cq.Cap())
	}
	for i, wc := range verbstest.MustPoll(t, o.cq, 3) {
		if wc.WRID != uint64(i) || wc.Status != verbs.WCWRFlushErr || wc.Opcode != verbs.WCRecv {
			t.Errorf("completion %d after resize: %+v", i, wc)
		}
	}
	wantErr(t, "resize to 0", o.cq.Resize(0), verbs.ErrInvalidArgument, "resize CQ")
}

// toInit moves a new QP to INIT, where receives may be posted.
func toInit(t *testing.T, qp *verbs.QP) {
	t.Helper()
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
}

// TestFailedRecvOpcode: a receive that fails (here a SEND longer than its
// buffer) completes with opcode IBV_WC_RECV, as rxe reports it, not with
// the zero opcode IBV_WC_SEND.
func TestFailedRecvOpcode(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	src, dst := p.A.Buffer(t, 64, 1), p.B.Buffer(t, 8, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 7, SGList: []verbs.SGE{dst.SGE(0, 8)}})
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, SGList: []verbs.SGE{src.SGE(0, 64)}})
	wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]
	if wc.WRID != 7 || wc.Status != verbs.WCLocLenErr || wc.Opcode != verbs.WCRecv || wc.Opcode.String() != "IBV_WC_RECV" {
		t.Errorf("receive completion %+v, want WR 7, local length error, IBV_WC_RECV", wc)
	}
}

// TestOpenDeviceUnspecified: a device asked for on no address of the
// host is refused before it binds.
func TestOpenDeviceUnspecified(t *testing.T) {
	for _, a := range []string{"0.0.0.0:0", "[::]:4791", "[::ffff:0.0.0.0]:0"} {
		d, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort(a)})
		if err == nil {
			d.Close()
		}
		wantErr(t, a, err, verbs.ErrInvalidArgument, "open device")
	}
}

// TestConnectZeroEndpoint: connecting to the zero Endpoint, a peer's
// that never arrived, fails at RTR saying the GID is missing.
func TestConnectZeroEndpoint(t *testing.T) {
	o := newObjects(t)
	err := o.qp.ConnectRC(1, verbs.Endpoint{}, verbs.DefaultConnectOptions())
	if !errors.Is(err, verbs.ErrInvalidArgument) || !strings.Contains(err.Error(), "DGID is zero: a zero Endpoint?") {
		t.Errorf("connect to the zero Endpoint: %v", err)
	}
}

// TestDeviceNames: a name is one device's while it is open, as the
// kernel's device names are; the names picked for unnamed devices pass
// over one in use.
func TestDeviceNames(t *testing.T) {
	net := memconn.NewNetwork(memconn.Options{})
	open := func(name string, ip string) (*verbs.Device, error) {
		l, err := net.Listen(netip.MustParseAddrPort(ip + ":4791"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := verbs.OpenDevice(verbs.DeviceConfig{Name: name, Bind: l})
		if err == nil {
			t.Cleanup(func() { d.Close() })
		}
		return d, err
	}
	a, err := open("gvname", "10.9.0.1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = open("gvname", "10.9.0.2")
	wantErr(t, "a second device named gvname", err, verbs.ErrInvalidArgument, "open device")
	if slices.ContainsFunc(verbs.Devices(), func(d *verbs.Device) bool { return d != a && d.Name() == "gvname" }) {
		t.Error("the refused device is listed")
	}
	a.Close()
	if _, err := open("gvname", "10.9.0.3"); err != nil {
		t.Errorf("the name of a closed device: %v", err)
	}
	// Unnamed devices get goverbsN names, none of them taken.
	u1, err := open("", "10.9.0.4")
	if err != nil {
		t.Fatal(err)
	}
	var next string
	fmt.Sscanf(u1.Name(), "goverbs%s", &next)
	n, _ := strconv.Atoi(next)
	if _, err := open(fmt.Sprintf("goverbs%d", n+1), "10.9.0.5"); err != nil {
		t.Fatal(err)
	}
	u2, err := open("", "10.9.0.6")
	if err != nil || u2.Name() == fmt.Sprintf("goverbs%d", n+1) || u2.Name() == u1.Name() {
		t.Errorf("unnamed devices %q then %q, with goverbs%d taken (%v)", u1.Name(), u2.Name(), n+1, err)
	}
	// A name freed is the first free again.
	u1.Close()
	if u3, err := open("", "10.9.0.7"); err != nil || u3.Name() != u1.Name() {
		t.Errorf("after %q closed, an unnamed device got %v (%v)", u1.Name(), u3, err)
	}
}
