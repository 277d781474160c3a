package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
)

// flush completes everything the QP holds with WR_FLUSH_ERR, in order,
// signaled or not (IBA 10.3.1, doc/protocol.md §11.5), and discards received
// packets. It runs in the turn after the QP entered the error state, and
// again for work posted while in it.
func (qp *QP) flush() {
	qpn := ib.QPN(qp.qpn)
	qp.flushSend()
	qp.req = requester{psn: qp.req.maxPSN, maxPSN: qp.req.maxPSN, cur: qp.sq.Head()}
	qp.comp.deadline = 0
	if qp.resp.haveWQE {
		wc := WC{WRID: qp.resp.wqe.wrID, Status: ib.WCWRFlushErr, Opcode: ib.WCRecv, QPNum: qpn}
		qp.recvCQ.push(&wc)
		qp.resp.haveWQE = false
	}
	for w := qp.rq.Peek(); w != nil; w = qp.rq.Peek() {
		wc := WC{WRID: w.wrID, Status: ib.WCWRFlushErr, Opcode: ib.WCRecv, QPNum: qpn}
		qp.rq.Pop()
		qp.recvCQ.push(&wc)
	}
	qp.resp.inSend, qp.resp.inWrite, qp.resp.ackPending = false, false, false
	qp.resp.read.active, qp.resp.readQ = false, readQueue{}
	qp.resp.stash.clear()
	qp.comp.board.reset()
	qp.comp.lossAt, qp.comp.probeAt, qp.resp.stallAt = 0, 0, 0
	qp.dropInbound()
	qp.lastWQEReached()
}

// flushSend completes every send WQE with WR_FLUSH_ERR, in order: all of
// them when the QP enters ERR, those behind a failed one when a UC or UD
// QP enters SQE (requester_unacked.go).
func (qp *QP) flushSend() {
	for w := qp.sq.Peek(); w != nil; w = qp.sq.Peek() {
		wc := WC{WRID: w.wrID, Status: ib.WCWRFlushErr, Opcode: wcOpcodes[w.opcode], QPNum: ib.QPN(qp.qpn)}
		qp.sq.Pop()
		qp.sendCQ.push(&wc)
	}
}
