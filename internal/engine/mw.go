package engine

import (
	"errors"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
)

// Memory window operations on the send queue (doc/protocol.md §12.5).
// BIND_MW and LOCAL_INV put nothing on the wire: the requester executes
// them when it reaches them, after the WQEs before them have been sent
// and before those after them are, and they complete in order with the
// rest. SEND_WITH_INV is a SEND whose last packet carries, in an IETH, the
// key the responder invalidates (responder_inv.go).

// Errors of posting memory window operations.
var (
	ErrNoMW        = errors.New("BIND_MW without a memory window")
	ErrLocalOpData = errors.New("BIND_MW and LOCAL_INV carry no data")
)

// mwBind is the bind of a BIND_MW WQE, copied when it is posted.
type mwBind struct {
	win *mem.Window
	b   mem.Binding
}

// isLocal reports whether the WQE is executed by the NIC itself, without
// a packet.
func (w *sendWQE) isLocal() bool { return w.opcode == ib.WRBindMW || w.opcode == ib.WRLocalInv }

// checkMWOp validates a BIND_MW or LOCAL_INV when it is posted: no data,
// and a bind names a window that was not deallocated (as rxe checks at
// post time). Whether the bind or the invalidation can be done is
// learnt when it executes.
func checkMWOp(wr *SendWR) error {
	if len(wr.SGList) != 0 || wr.Flags&ib.SendInline != 0 {
		return ErrLocalOpData
	}
	if wr.Opcode == ib.WRBindMW {
		if wr.BindMW.MW == nil || *wr.BindMW.MW == nil {
			return ErrNoMW
		}
		if (*wr.BindMW.MW).Freed() {
			return ErrClosed
		}
	}
	return nil
}

// fillMWOp copies what a memory window operation needs into its WQE. A
// bind gives the window its new key now, as libibverbs' ibv_mw.rkey has
// it; the key reaches memory once the bind executes.
func fillMWOp(w *sendWQE, wr *SendWR) {
	switch wr.Opcode {
	case ib.WRSendWithInv, ib.WRLocalInv:
		w.imm = uint32(wr.InvalidateRKey)
	case ib.WRBindMW:
		if w.bind == nil {
			w.bind = new(mwBind) // once per slot: later binds reuse it
		}
		info := &wr.BindMW.BindInfo
		var r *mem.Region
		if info.MR != nil {
			r = *info.MR
		}
		win := *wr.BindMW.MW
		w.bind.win = win
		w.bind.b = mem.Binding{Region: r, Addr: info.Addr, Length: info.Length, Access: info.MWAccessFlags,
			Key: win.Post(mem.Key(wr.BindMW.RKey))}
	}
}

// execLocal executes a BIND_MW or LOCAL_INV WQE the requester reached. It
// takes no PSN: its last PSN is the one before it, so the ACK of the WQEs
// before it completes it too (completeThrough), and completeLocal does
// when nothing else is outstanding. A failed one completes with
// IBV_WC_MW_BIND_ERR, the IBA's Memory Management Operation Error (IBA
// 11.6.2; rxe reports LOC_QP_OP_ERR for a failed LOCAL_INV), and the QP
// goes to the error state. A WQE a go-back-N went back over stays done.
func (qp *QP) execLocal(w *sendWQE) {
	if w.state == wqeSent {
		return
	}
	w.lastPSN = qp.req.psn.Sub(1)
	// An unbinding waits for the accesses through the window, and this
	// turn's transmit batch may hold some (payloads the link gathers from
	// memory, xmit.go): send them first, or the turn would wait for itself.
	qp.xmit.flush(qp)
	var err error
	if w.opcode == ib.WRBindMW {
		b := &w.bind.b
		b.PD, b.QP = qp.pd, qp.qpn
		err = w.bind.win.Bind(b)
	} else {
		err = qp.dev.mrs.Invalidate(mem.Key(w.imm), qp.pd, 0)
	}
	if err != nil {
		w.state, w.status = wqeFailed, ib.WCMWBindErr
		return
	}
	w.state = wqeSent
}

// lastToSend reports whether no WQE behind the one being sent puts a
// packet on the wire soon: the send queue ends there, or a BIND_MW or
// LOCAL_INV comes next, which sends nothing and completes only after it
// (ackWanted asks for an ACK then).
func (qp *QP) lastToSend() bool {
	next := qp.req.cur + 1
	return next == qp.sq.Tail() || qp.sq.At(next).isLocal()
}

// completeLocal completes the executed BIND_MW and LOCAL_INV WQEs at the
// head of the send queue: no response will.
func (qp *QP) completeLocal() {
	if qp.State() == ib.QPStateErr {
		return // flushed instead, with what follows a failure
	}
	for w := qp.oldest(); w != nil && w.isLocal() && w.state == wqeSent; w = qp.oldest() {
		qp.finishSend(w, ib.WCSuccess)
	}
}
