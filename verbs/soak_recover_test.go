package verbs_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
)

// soakOutage returns a memconn filter that drops every datagram to the
// requester's device at a and every one from it after its first n: its
// requests stop, and no answer comes back, so the batch must run out of
// retries, whatever the responder executed.
func soakOutage(a netip.AddrPort, n int64) func(*memconn.Datagram) memconn.Verdict {
	var sent atomic.Int64
	return func(d *memconn.Datagram) memconn.Verdict {
		if d.Dst == a || sent.Add(1) > n {
			return memconn.Drop
		}
		return memconn.Deliver
	}
}

// recoverBatch verifies a batch whose operation failed ran out of
// retries, and connects the QPs again, as an application recovers from
// RETRY_EXC_ERR. The operations before failed completed and are checked
// in full. Of the rest, the responder executed some, in order, and which
// is not known to the requester: the first k for some k, which the
// receives B completed, its two atomic words and the WRITEs it placed
// must all agree on (executed). Their effects on B are checked, and of
// the others only that nothing was written past a slot. The atomic words
// B holds are then what the next batches count from.
func (s *soakRig) recoverBatch(t *testing.T, ops []soakOp, failed, recvs int, sum0, cas0 uint64) {
	t.Helper()
	a, b := s.p.A, s.p.B
	if s.p.Net != nil {
		s.p.Net.SetFilter(nil) // the outage is over
	}
	time.Sleep(time.Second) // what the fabric still holds arrives, or is lost
	if err := b.QP.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	rwcs := soakPoll(t, s.p, b.RecvCQ, recvs)
	got := 0
	for got < len(rwcs) && rwcs[got].Status == verbs.WCSuccess {
		got++
	}
	for _, wc := range rwcs[got:] {
		if wc.Status != verbs.WCWRFlushErr {
			t.Fatalf("receive completion %+v after B's QP moved to the error state", wc)
		}
	}
	sum := binary.NativeEndian.Uint64(s.words.Bytes())
	cas := binary.NativeEndian.Uint64(s.words.Bytes()[8:])
	k := s.executed(t, ops, failed, got, sum0, cas0, sum, cas)
	for i := range ops {
		op := &ops[i]
		switch {
		case i < failed:
			s.check(t, i, op, rwcs)
		case i < k && op.op != verbs.WRRDMARead && op.op != verbs.WRAtomicFetchAndAdd && op.op != verbs.WRAtomicCmpAndSwp:
			s.check(t, i, op, rwcs) // executed by B, whose side is all a SEND or WRITE has
		default:
			s.checkGuard(t, i, op)
		}
	}
	for _, q := range []*verbs.QP{a.QP, b.QP} {
		if err := q.Modify(&verbs.QPAttr{State: verbs.QPStateReset}, verbs.QPAttrState); err != nil {
			t.Fatal(err)
		}
	}
	psnA, psnB := s.rng.Uint32()&0xffffff, s.rng.Uint32()&0xffffff
	if err := a.QP.ConnectRC(psnA, b.QP.Endpoint(psnB), s.opts); err != nil {
		t.Fatal(err)
	}
	if err := b.QP.ConnectRC(psnB, a.QP.Endpoint(psnA), s.opts); err != nil {
		t.Fatal(err)
	}
	s.sum, s.cas = sum, cas
	s.failures++
}

// executed returns how many of a failed batch's operations the responder
// executed: a k of at least failed for which B's completed receives
// (got), its FETCH_ADD and CMP_AND_SWP words (from sum0 and cas0 before
// the batch) and the WRITEs it placed all say the first k operations ran
// and no other. It fails the test if no k does.
func (s *soakRig) executed(t *testing.T, ops []soakOp, failed, got int, sum0, cas0, sum, cas uint64) int {
	t.Helper()
	recvs, wsum, wcas := 0, sum0, cas0
	for k := 0; k <= len(ops); k++ {
		if k >= failed && recvs == got && wsum == sum && wcas == cas && s.placedUpTo(ops, failed, k) {
			return k
		}
		if k == len(ops) {
			break
		}
		switch op := &ops[k]; {
		case op.recv >= 0:
			recvs++
		case op.op == verbs.WRAtomicFetchAndAdd:
			wsum += op.add
		case op.op == verbs.WRAtomicCmpAndSwp && wcas == op.cmp:
			wcas = op.swap
		}
	}
	logState(t, s.p)
	t.Fatalf("after RETRY_EXC_ERR of entry %d of %+v: no prefix of the batch matches B's %d receives, FETCH_ADD word %#x (was %#x) and CMP_AND_SWP word %#x (was %#x)",
		failed, ops, got, sum, sum0, cas, cas0)
	return 0
}

// placedUpTo reports whether every WRITE from failed up to k placed all
// its bytes in its slot.
func (s *soakRig) placedUpTo(ops []soakOp, failed, k int) bool {
	for i := failed; i < k; i++ {
		if op := &ops[i]; op.op == verbs.WRRDMAWrite || op.op == verbs.WRRDMAWriteWithImm {
			if placed, source := s.slot(i, op); !bytes.Equal(placed[:op.n], source[:op.n]) {
				return false
			}
		}
	}
	return true
}

// checkGuard checks that an operation whose bytes may have been placed in
// part wrote nothing past its slot's message.
func (s *soakRig) checkGuard(t *testing.T, i int, op *soakOp) {
	t.Helper()
	if placed, _ := s.slot(i, op); placed != nil && op.n < soakSlot && placed[op.n] != guard {
		t.Fatalf("entry %d, %v of %d bytes, after RETRY_EXC_ERR: the byte after it was overwritten", i, op.op, op.n)
	}
}
