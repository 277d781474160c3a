package verbs_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestConnectWrongType: a QP readied by the call of another type fails at
// once, naming the call its type needs, and stays in RESET; the IBA
// attribute sets would otherwise have reported a missing or unexpected
// attribute half way through.
func TestConnectWrongType(t *testing.T) {
	o := newObjects(t)
	opts := verbs.DefaultConnectOptions()
	for name, ready := range map[string]func() error{
		"ConnectUC": func() error { return o.qp.ConnectUC(1, o.qp.Endpoint(2), opts) },
		"ReadyUD":   func() error { return o.qp.ReadyUD(0x11, 1) },
	} {
		err := ready()
		if !errors.Is(err, verbs.ErrInvalidArgument) || !strings.Contains(err.Error(), "RC QP, which ConnectRC readies") {
			t.Errorf("%s on an RC QP: %v", name, err)
		}
		if st := o.qp.State(); st != verbs.QPStateReset {
			t.Errorf("%s left the QP in %v", name, st)
		}
	}
	if o.qp.Type() != verbs.QPTypeRC {
		t.Errorf("Type() = %v", o.qp.Type())
	}
}

// TestConnectFromInit: ConnectRC takes a QP that Modify moved to INIT to
// post receives before the peer could send, and the SEND that follows
// lands in the receive posted then.
func TestConnectFromInit(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	for _, qp := range []*verbs.QP{p.A.QP, p.B.QP} {
		if err := qp.Modify(&verbs.QPAttr{State: verbs.QPStateReset}, verbs.QPAttrState); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.B.QP.Modify(&verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, AccessFlags: verbs.AccessLocalWrite},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	src, dst := p.A.Buffer(t, 64, 9), p.B.Buffer(t, 64, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 5, SGList: []verbs.SGE{dst.SGE(0, 64)}})
	opts := verbs.DefaultConnectOptions()
	if err := p.B.QP.ConnectRC(20, p.A.QP.Endpoint(10), opts); err != nil {
		t.Fatal(err)
	}
	if err := p.A.QP.ConnectRC(10, p.B.QP.Endpoint(20), opts); err != nil {
		t.Fatal(err)
	}
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 64)}})
	if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.WRID != 5 || wc.Status != verbs.WCSuccess || wc.ByteLen != 64 {
		t.Fatalf("receive %+v", wc)
	}
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Error("the SEND's bytes did not arrive")
	}
}
