package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// respondUD delivers one UD message (doc/protocol.md §13.3): the receive
// WQE gets the packet's network header in its first 40 bytes, then the
// payload, and completes with the GRH flag, the sender's QP number from
// the DETH and a byte count that includes the 40 bytes. There is no PSN
// check and no answer. A message without a receive WQE, or too long for
// it, is dropped and counted; the WQE stays for the next one, unless it
// came from an SRQ, where it completes with LOC_LEN_ERR (class E, as
// unackedErrors; the Q_Key was checked on receipt, admitsDatagram).
func (qp *QP) respondUD(in *inPkt) {
	p, r := in.packet(), &qp.resp
	qp.noteReceived()
	if !r.haveWQE {
		if !qp.popRecv(&r.wqe) {
			qp.dev.counters.inc(DropNoRecvWQE)
			return
		}
		r.haveWQE = true
	}
	data := p.Payload()
	n := uint32(wire.GRHSize + len(data))
	if n > r.wqe.length {
		qp.failUnacked(errRecvLength)
		return
	}
	if qp.copySGEs(r.wqe.sge, 0, in.grh(), true) != mem.FaultNone ||
		qp.copySGEs(r.wqe.sge, wire.GRHSize, data, true) != mem.FaultNone {
		qp.failUnacked(errRecvProt)
		return
	}
	wc := WC{WRID: r.wqe.wrID, Opcode: ib.WCRecv, ByteLen: n, QPNum: ib.QPN(qp.qpn),
		SrcQP: ib.QPN(p.DETH().SrcQP()), Flags: ib.WCFlagGRH}
	if h := p.ImmDt(); h != nil {
		wc.Imm, wc.Flags = h.Imm(), wc.Flags|ib.WCFlagWithImm
	}
	r.haveWQE = false
	qp.recvCQ.pushSolicited(&wc, p.BTH().SolicitedEvent())
	qp.dev.counters.inc(RDMARecvs)
}
