package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// privilegedQKey is the high bit of a Q_Key: a send WR whose Q_Key has it
// set sends the QP's own Q_Key instead, so that only a QP given a
// privileged (controlled) Q_Key at modify can send one (doc/protocol.md
// §13.3).
const privilegedQKey = 1 << 31

// checkDatagramWR checks what a UD send adds to a work request
// (ibv_send_wr.wr.ud): an open address handle of the QP's PD.
func (qp *QP) checkDatagramWR(wr *SendWR) error {
	if wr.AH == nil {
		return ErrInvalidAH
	}
	if ah := *wr.AH; ah == nil || ah.pd != qp.pd || ah.closed.Load() {
		return ErrInvalidAH
	}
	return nil
}

// sendDatagram sends a UD message as the one packet it is
// (doc/protocol.md §13.3): SEND ONLY, with or without immediate data,
// a DETH with the Q_Key and this QP's number, to the QP and address the
// work request names. A message longer than the port's MTU emits no
// packet and is no error (C10-93.1.1; rxe does the same); it is counted.
func (qp *QP) sendDatagram(w *sendWQE) {
	psn := qp.req.psn
	qp.req.psn = psn.Next()
	if w.length > uint32(qp.dev.activeMTU.Bytes()) {
		qp.dev.counters.inc(UDSendTooLong)
		w.state = wqeSent
		return
	}
	f := wire.BTHFields{Opcode: wire.UDSendOnly, PKey: defaultPKey, DestQP: w.remoteQPN, PSN: psn,
		SolicitedEvent: w.flags&ib.SendSolicited != 0}
	if w.opcode == ib.WRSendWithImm {
		f.Opcode = wire.UDSendOnlyWithImmediate
	}
	p, gather := qp.startPayload(w, &f, w.length)
	qkey := w.qkey
	if qkey&privilegedQKey != 0 {
		qkey = qp.attr.QKey
	}
	p.DETH().Encode(&wire.DETHFields{QKey: qkey, SrcQP: qp.qpn})
	if h := p.ImmDt(); h != nil {
		h.SetImm(w.imm)
	}
	if !qp.queuePayload(w, p, gather, &w.ah.env, &w.ah.dest, w.length) {
		qp.xmit.abort()
		w.state, w.status = wqeFailed, compErrors[compLocalProt].status
		return
	}
	w.state = wqeSent
}
