package engine

import (
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// invalidateIETH invalidates what the IETH (IBA 9.3.7) of p, the last
// packet of a SEND WITH INVALIDATE, names, before the message completes
// (IBA 10.6.7, doc/protocol.md §12.5): a type 2 window of the QP's PD
// bound through this QP, the checks of an access through it. A key that
// names no such window is an Invalid Request: NAK, the receive WQE
// completes with REM_INV_REQ_ERR and the QP goes to the error state.
func (qp *QP) invalidateIETH(p wire.Packet) respOutcome {
	h := p.IETH()
	if h == nil {
		return respDone
	}
	qp.xmit.flush(qp) // its READ responses may hold the window (see execLocal)
	if qp.dev.mrs.Invalidate(mem.Key(h.RKey()), qp.pd, qp.qpn) != nil {
		return errInvalidRequest
	}
	return respDone
}
