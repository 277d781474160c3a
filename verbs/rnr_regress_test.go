package verbs_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// The same with an RNR NAK: a READ response packet is lost and the SEND
// behind the READ is RNR-NAKed; the requester must re-request the READ's
// missing data rather than skip past it.
func TestRNRNAKPastRead(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.PathMTU = verbs.MTU256
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	dropFirst(p, wire.RCReadResponseMiddle)
	remote := p.B.Buffer(t, 1024, 7)
	local := p.A.Buffer(t, 1024+8, 0)
	copy(local.Bytes()[1024:], "AAAAAAAA")
	post(t, p.A.QP, &verbs.SendWR{WRID: 10, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{local.SGE(0, 1024)}, RemoteAddr: remote.Addr(), RKey: remote.RKey(),
		Next: &verbs.SendWR{WRID: 11, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{local.SGE(1024, 8)}}})
	time.Sleep(50 * time.Millisecond)
	rb := p.B.Buffer(t, 8, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{rb.SGE(0, 8)}})
	wcs, err := verbstest.Poll(p.A.SendCQ, 2, 5*time.Second)
	for _, wc := range wcs {
		t.Logf("A send WC: wrid %d status %v", wc.WRID, wc.Status)
	}
	if err != nil {
		t.Errorf("%v", err)
	}
	if !bytes.Equal(local.Bytes()[:1024], remote.Bytes()) {
		t.Errorf("READ data differs from the remote buffer")
	}
	if rw, err := verbstest.Poll(p.B.RecvCQ, 1, time.Second); err != nil || rw[0].Status != verbs.WCSuccess {
		t.Errorf("B receive: %v %v", rw, err)
	}
}
