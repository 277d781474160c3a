package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// respondUC executes one UC request packet (doc/protocol.md §13.2). UC
// carries RC's SEND and WRITE packets without ACKs or resends. A packet
// that does not continue the message in progress at the expected PSN
// means one was lost: that message is dropped — what it placed stays, its
// receive WQE completes nothing and takes the next SEND — and so is every
// packet until a FIRST or ONLY starts a message, which is taken whole at
// whatever PSN it has (IBA 9.8, unreliable services; rxe does the same). Requests a RC
// responder NAKs are dropped the same way (unackedErrors).
func (qp *QP) respondUC(in *inPkt) {
	p, r := in.packet(), &qp.resp
	info, psn := p.Info(), p.BTH().PSN()
	qp.noteReceived()
	gap := psn != r.psn
	if gap && !r.dropMsg {
		qp.dev.counters.inc(OutOfSeqRequest)
	}
	if (gap || r.dropMsg) && !info.Is(wire.OpFirst) {
		qp.dropMessage(DropUCIncomplete)
		return
	}
	r.dropMsg = false
	if info.Is(wire.OpFirst) && (r.inSend || r.inWrite) {
		// The message in progress never got its last packet.
		qp.abandonMessage()
		if !gap {
			qp.dev.counters.inc(DropInvalidRequest) // the sender cut it short
		}
	}
	if !r.inOrder(info) {
		qp.dropMessage(DropInvalidRequest)
		return
	}
	if info.Is(wire.OpConsumesRecv) && !r.haveWQE {
		if !qp.popRecv(&r.wqe) {
			qp.dropMessage(DropNoRecvWQE) // no RNR NAK on UC
			return
		}
		r.haveWQE, r.recvOff = true, 0
	}
	var o respOutcome
	if info.Is(wire.OpSend) {
		o = qp.respSend(p, psn)
	} else {
		o = qp.respWrite(p, psn)
	}
	if o != respDone {
		qp.failUnacked(o)
	}
}

// unackedErrors is how the UC and UD responders treat the error classes
// of respErrors (IBA 9.9.3, classes D and E of the unreliable services;
// rxe's do_class_d1e_error): the request and the rest of its message are
// dropped without an answer, and
// a receive WQE in use is kept for the next message — except that one
// taken from an SRQ completes with status (class E), and one whose
// memory cannot be written is an error of the QP (class A).
var unackedErrors = [...]struct {
	fatal  bool        // the QP enters ERR
	status ib.WCStatus // of the receive WQE in use, if it completes
	srq    bool        // it completes when it came from an SRQ
}{
	errInvalidRequest: {},
	errRemoteAccess:   {},
	errRecvLength:     {status: ib.WCLocLenErr, srq: true},
	errRecvProt:       {fatal: true, status: ib.WCLocProtErr},
}

// failUnacked applies error class e to the UC or UD message in progress.
func (qp *QP) failUnacked(e respOutcome) {
	c, r := unackedErrors[e], &qp.resp
	if r.haveWQE && (c.fatal || c.srq && qp.srq != nil) {
		wc := WC{WRID: r.wqe.wrID, Status: c.status, Opcode: ib.WCRecv, QPNum: ib.QPN(qp.qpn)}
		qp.recvCQ.push(&wc)
		r.haveWQE = false
	}
	if c.fatal {
		qp.enterError(respErrors[e].event)
		return
	}
	qp.dropMessage(DropInvalidRequest)
}

// dropMessage drops the message in progress and the rest of its packets
// (a UD message is one), counted under c.
func (qp *QP) dropMessage(c Counter) {
	qp.dev.counters.inc(c)
	qp.abandonMessage()
	qp.resp.dropMsg = true
}

// abandonMessage forgets the message in progress; the receive WQE it took
// stays for the next message (IBA 9.8: a UC receive WQE completes only
// with a whole message).
func (qp *QP) abandonMessage() {
	r := &qp.resp
	r.inSend, r.inWrite, r.recvOff = false, false, 0
}
