package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
)

// requestUnacked is the requester of the unacknowledged services, UC and
// UD (doc/protocol.md §13): each WQE's packets go out in order, and the
// WQE completes as soon as its last packet is queued for the link. No ACK
// will come and nothing is kept for a resend, so there is no window, no
// timer and no completer. A local error completes the WQE with its status
// and moves the QP to SQE, which flushes the send queue and leaves the
// receive queue working (IBA 10.3.1); a modify to RTS resumes sending. As
// RC's requester does, a turn goes past its budget while the next packet
// would join the run the transmit batch ends with (extends).
func (qp *QP) requestUnacked(now instant, budget int) (more bool) {
	switch qp.State() {
	case ib.QPStateRTS, ib.QPStateSQD:
	case ib.QPStateSQE:
		qp.flushSend() // what is posted in SQE completes flushed
		qp.req.cur = qp.sq.Head()
		return false
	default:
		return false
	}
	qp.req.cur = qp.sq.Head() // where extends looks
	for ; budget > 0 || qp.extends(); budget-- {
		w := qp.sq.Peek()
		if w == nil {
			return false
		}
		if w.state == wqePosted {
			if qp.State() == ib.QPStateSQD {
				return false
			}
			w.state, w.sent = wqeSending, 0
		}
		if !qp.ccAllows(now) {
			return false
		}
		qp.kind.segment(qp, w)
		switch w.state {
		case wqeFailed:
			qp.finishSend(w, w.status)
			qp.state.Store(uint32(ib.QPStateSQE))
			qp.flushSend()
			qp.req.cur = qp.sq.Head()
			return false
		case wqeSent:
			qp.finishSend(w, ib.WCSuccess)
			qp.req.cur = qp.sq.Head()
		}
	}
	return qp.sq.Peek() != nil // extends may have sent the last
}

// sendUCSegment sends the next packet of a UC SEND or WRITE
// (doc/protocol.md §13.1): RC's segmentation with UC's opcodes.
func (qp *QP) sendUCSegment(w *sendWQE) {
	f := qp.bth(0, qp.req.psn)
	qp.sendSegment(w, &f)
}
