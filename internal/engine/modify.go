package engine

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// Modify changes the QP's attributes named by mask and, with
// ib.QPAttrState, its state, following the transition table and the
// required/optional attribute sets of IBA 10.3.1 (doc/protocol.md §11).
func (qp *QP) Modify(attr *QPAttr, mask ib.QPAttrMask) error {
	if err := qp.modify(attr, mask); err != nil {
		return err
	}
	qp.task.schedule()
	return nil
}

func (qp *QP) modify(attr *QPAttr, mask ib.QPAttrMask) error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.destroyed {
		return ErrClosed
	}
	qp.settle()
	cur := qp.State()
	next := cur
	if mask&ib.QPAttrState != 0 {
		next = attr.State
	}
	if mask&ib.QPAttrCurState != 0 && attr.CurState != cur {
		return fmt.Errorf("%w: current state is %v, not %v", ErrInvalidArgument, cur, attr.CurState)
	}
	if err := ib.CheckTransition(qp.typ, cur, next, mask); err != nil {
		return err
	}
	if err := qp.checkValues(attr, mask); err != nil {
		return err
	}
	qp.apply(attr, mask)
	if next != ib.QPStateSQD {
		qp.events.sqDrain = false
	} else if cur == ib.QPStateRTS {
		qp.events.sqDrain = mask&ib.QPAttrEnSQDAsyncNotify != 0 && attr.EnSQDAsyncNotify
	}
	switch next {
	case ib.QPStateReset:
		// Publish RESET before emptying the queues: a post checks the
		// state under the queue lock, so it either lands before the reset
		// clears it or sees RESET and fails.
		qp.state.Store(uint32(next))
		qp.reset()
	case ib.QPStateRTR:
		if cur == ib.QPStateInit {
			qp.enterRTR()
		}
	case ib.QPStateRTS:
		if cur == ib.QPStateRTR {
			qp.enterRTS()
		}
	case ib.QPStateSQD:
		if cur == ib.QPStateSQD && mask&ib.QPAttrAV != 0 && qp.kind.connected {
			qp.setPath() // a new primary path to the same peer QP (IBA 10.3.1)
		}
	}
	qp.state.Store(uint32(next))
	return nil
}

// checkValues validates the attribute values the mask names, with the
// limits and transitions of doc/protocol.md §11 (as rxe and the kernel's
// verbs layer check them).
func (qp *QP) checkValues(a *QPAttr, mask ib.QPAttrMask) error {
	bad := func(what string, v any) error { return fmt.Errorf("%w: %s %v", ErrInvalidArgument, what, v) }
	if mask&ib.QPAttrPort != 0 && a.PortNum != 1 {
		return bad("port", a.PortNum)
	}
	if mask&ib.QPAttrPKeyIndex != 0 && a.PKeyIndex != 0 {
		return bad("P_Key index", a.PKeyIndex)
	}
	if mask&ib.QPAttrAccessFlags != 0 && a.AccessFlags&^(ib.AccessLocalWrite|ib.AccessRemoteWrite|ib.AccessRemoteRead|ib.AccessRemoteAtomic) != 0 {
		return bad("access flags", a.AccessFlags)
	}
	if mask&ib.QPAttrPathMTU != 0 && (a.PathMTU < ib.MTU256 || a.PathMTU > ib.MTU4096) {
		return bad("path MTU", a.PathMTU)
	}
	if mask&ib.QPAttrAV != 0 {
		if err := qp.dev.checkAV(&a.AH); err != nil {
			return err
		}
	}
	if mask&ib.QPAttrTimeout != 0 && a.Timeout > 31 {
		return bad("timeout", a.Timeout)
	}
	if mask&ib.QPAttrRetryCnt != 0 && a.RetryCnt > 7 {
		return bad("retry_cnt", a.RetryCnt)
	}
	if mask&ib.QPAttrRNRRetry != 0 && a.RNRRetry > 7 {
		return bad("rnr_retry", a.RNRRetry)
	}
	if mask&ib.QPAttrMinRNRTimer != 0 && a.MinRNRTimer > 31 {
		return bad("min_rnr_timer", a.MinRNRTimer)
	}
	if mask&ib.QPAttrMaxQPRdAtomic != 0 && a.MaxRdAtomic > MaxQPRdAtomic {
		return bad("max_rd_atomic", a.MaxRdAtomic)
	}
	if mask&ib.QPAttrMaxDestRdAtomic != 0 && a.MaxDestRdAtomic > MaxQPRdAtomic {
		return bad("max_dest_rd_atomic", a.MaxDestRdAtomic)
	}
	if mask&ib.QPAttrCap != 0 {
		return fmt.Errorf("%w: resizing queues", ErrNotSupported)
	}
	if mask&ib.QPAttrMaxDestRdAtomic != 0 && qp.State() == ib.QPStateSQD && a.MaxDestRdAtomic != qp.attr.MaxDestRdAtomic {
		// The responder's READ and atomic resources are sized at RTR.
		return fmt.Errorf("%w: changing max_dest_rd_atomic after RTR", ErrNotSupported)
	}
	return nil
}

// apply copies the masked attributes. Called with mu held.
func (qp *QP) apply(a *QPAttr, mask ib.QPAttrMask) {
	t := &qp.attr
	set := func(bit ib.QPAttrMask, f func()) {
		if mask&bit != 0 {
			f()
		}
	}
	set(ib.QPAttrAccessFlags, func() { t.AccessFlags = a.AccessFlags })
	set(ib.QPAttrPKeyIndex, func() { t.PKeyIndex = a.PKeyIndex })
	set(ib.QPAttrPort, func() { t.PortNum = a.PortNum })
	set(ib.QPAttrQKey, func() { t.QKey = a.QKey; qp.qkey.Store(a.QKey) })
	set(ib.QPAttrAV, func() { t.AH = a.AH })
	set(ib.QPAttrPathMTU, func() { t.PathMTU = a.PathMTU })
	set(ib.QPAttrTimeout, func() { t.Timeout = a.Timeout })
	set(ib.QPAttrRetryCnt, func() { t.RetryCnt = a.RetryCnt })
	set(ib.QPAttrRNRRetry, func() { t.RNRRetry = a.RNRRetry })
	set(ib.QPAttrRQPSN, func() { t.RQPSN = a.RQPSN & wire.PSNMask })
	set(ib.QPAttrSQPSN, func() { t.SQPSN = a.SQPSN & wire.PSNMask })
	set(ib.QPAttrMaxQPRdAtomic, func() { t.MaxRdAtomic = a.MaxRdAtomic })
	set(ib.QPAttrMaxDestRdAtomic, func() { t.MaxDestRdAtomic = a.MaxDestRdAtomic })
	set(ib.QPAttrMinRNRTimer, func() { t.MinRNRTimer = a.MinRNRTimer })
	set(ib.QPAttrDestQPN, func() { t.DestQPN = a.DestQPN & qpnMask })
}

// qpnMask keeps the 24 bits of a QP number.
const qpnMask = 1<<24 - 1

// enterRTR readies the responder: expected PSN, peer address (of a
// connected service; a datagram QP has none), resources.
func (qp *QP) enterRTR() {
	a := &qp.attr
	qp.mtu = uint32(a.PathMTU.Bytes())
	if qp.kind.connected {
		qp.setPath()
	}
	qp.resp = responder{psn: wire.PSN(a.RQPSN), wqe: recvWQE{sge: qp.resp.wqe.sge[:0]}}
	qp.resp.res = make([]resource, roundPow2(int(a.MaxDestRdAtomic)))
}

// setPath points a connected QP at the peer its address vector names: the
// address its packets go to and come from, the flow they leave by, and
// the envelope they are sealed for — at RTR, and when an SQD → SQD modify
// gives a new one. The responder's ACK base covers the envelope, so it is
// computed again.
func (qp *QP) setPath() {
	peer, env := qp.dev.route(&qp.attr.AH)
	qp.flow = 0
	if f, src := qp.dev.openFlow(peer); f != 0 {
		qp.flow, env = f, envelope(src, peer)
	}
	qp.peer.Store(&peer)
	qp.env = env
	qp.resp.ackBased = false
}

// enterRTS readies the requester and completer.
func (qp *QP) enterRTS() {
	psn := wire.PSN(qp.attr.SQPSN)
	qp.req = requester{psn: psn, maxPSN: psn, cur: qp.sq.Head()}
	qp.req.win.init(qp.mtu)
	qp.comp = completer{psn: psn, ackNext: psn}
	qp.comp.reload(&qp.attr)
}

// reset empties the queues without completions and forgets all protocol
// state (IBA 10.3.1, RESET).
func (qp *QP) reset() {
	qp.sqMu.Lock()
	qp.sq.Reset()
	qp.sqMu.Unlock()
	qp.rqMu.Lock()
	qp.rq.Reset()
	qp.rqMu.Unlock()
	qp.dropInbound()
	qp.xmit.discard()
	qp.req = requester{}
	qp.comp = completer{}
	qp.resp = responder{wqe: recvWQE{sge: qp.resp.wqe.sge[:0]}}
	qp.peer.Store(nil)
	qp.flow = 0
	qp.attr = QPAttr{PathMTU: ib.MTU256, PortNum: 1}
	qp.qkey.Store(0)
	qp.events = qpEvents{}
}

func roundPow2(n int) int {
	if n == 0 {
		return 0
	}
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
