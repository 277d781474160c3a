package verbs_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// A PSN-sequence NAK whose PSN lies beyond a READ whose response was lost
// must not move the requester past the READ's PSNs: the READ is asked for
// again within its own range, and each SEND reaches its own receive.
func TestSeqNAKPastRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := verbs.DefaultConnectOptions()
		o.PathMTU = verbs.MTU1024
		p := verbstest.New(t, verbstest.Options{Connect: &o})
		dropFirst(p, wire.RCReadResponseOnly, wire.RCSendOnly)
		remote := p.B.Buffer(t, 1024, 7)
		local := p.A.Buffer(t, 1024+16, 0)
		copy(local.Bytes()[1024:], "AAAAAAAABBBBBBBB")
		rb := p.B.Buffer(t, 64, 0)
		postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{rb.SGE(0, 32)},
			Next: &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{rb.SGE(32, 32)}}})
		post(t, p.A.QP, &verbs.SendWR{WRID: 10, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{local.SGE(0, 1024)}, RemoteAddr: remote.Addr(), RKey: remote.RKey(),
			Next: &verbs.SendWR{WRID: 11, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{local.SGE(1024, 8)},
				Next: &verbs.SendWR{WRID: 12, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{local.SGE(1032, 8)}}}})
		wcs, err := verbstest.Poll(p.A.SendCQ, 3, 30*time.Second)
		for _, wc := range wcs {
			t.Logf("A send WC: wrid %d status %v", wc.WRID, wc.Status)
		}
		if err != nil {
			t.Errorf("send completions: %v", err)
		}
		rw, _ := verbstest.Poll(p.B.RecvCQ, 2, 30*time.Second)
		for _, wc := range rw {
			t.Logf("B recv WC: wrid %d status %v len %d", wc.WRID, wc.Status, wc.ByteLen)
		}
		t.Logf("B recv buffer: %q", rb.Bytes()[:40])
		if string(rb.Bytes()[:8]) != "AAAAAAAA" {
			t.Errorf("first receive WQE holds %q, want AAAAAAAA", rb.Bytes()[:8])
		}
	})
}

// An RNR wait longer than the local ACK timeout must not cost a transport
// retry: with retry_cnt 0 and rnr_retry 7 (infinite) the SEND still succeeds.
// The timeout must also cover a real round trip, as with retry_cnt 0 one
// late RNR NAK fails the SEND: under -race on a loaded 2-core machine a
// trace showed a request reach the peer's responder 22 ms after it went to
// the link, past the 16.8 ms this test used to run with.
func TestRNRWaitConsumesRetry(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.Timeout, o.RetryCnt, o.RNRRetry, o.MinRNRTimer = 14, 0, 7, 26 // 67 ms ACK timeout, 81.92 ms RNR timer
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	local := p.A.Buffer(t, 8, 0)
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{local.SGE(0, 8)}})
	time.Sleep(150 * time.Millisecond)
	rb := p.B.Buffer(t, 8, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{rb.SGE(0, 8)}})
	wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]
	if wc.Status != verbs.WCSuccess {
		t.Errorf("SEND completed with %v; rnr_retry=7 should wait as long as needed", wc.Status)
	}
}

// A WQE that fails locally behind a READ is reported once the READ ends.
func TestFailedWQEAfterRead(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	remote := p.B.Buffer(t, 64, 7)
	local := p.A.Buffer(t, 64, 0)
	bad := local.SGE(0, 8)
	bad.LKey ^= 0xff // wrong key tag
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: remote.Addr(), RKey: remote.RKey(),
		Next: &verbs.SendWR{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{bad},
			RemoteAddr: remote.Addr(), RKey: remote.RKey()}})
	wcs, err := verbstest.Poll(p.A.SendCQ, 2, 3*time.Second)
	for _, wc := range wcs {
		t.Logf("WC wrid %d status %v", wc.WRID, wc.Status)
	}
	if err != nil {
		t.Errorf("%v; QP state %v", err, p.A.QP.State())
	}
}

// dropFirst makes the fabric lose the first packet of each given opcode.
func dropFirst(p *verbstest.Pair, ops ...wire.Opcode) {
	var mu sync.Mutex
	dropped := map[wire.Opcode]bool{}
	p.Net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
		pk := wire.Packet(d.Data)
		if pk.Validate() != nil {
			return memconn.Deliver
		}
		mu.Lock()
		defer mu.Unlock()
		for _, op := range ops {
			if pk.Opcode() == op && !dropped[op] {
				dropped[op] = true
				return memconn.Drop
			}
		}
		return memconn.Deliver
	})
}
