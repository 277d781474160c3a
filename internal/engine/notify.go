package engine

import "github.com/goverbs/goverbs/internal/ib"

// arm is a CQ's request for a completion event (ibv_req_notify_cq).
type arm uint8

const (
	armNone      arm = iota
	armNext          // the next completion
	armSolicited     // the next solicited or unsuccessful completion
)

// SetEventHandler makes f run once for each completion event: the first
// completion added after ReqNotify armed the CQ. Set it before any QP
// completes into the CQ. f runs on the goroutine that added the
// completion, after the completion is visible to Poll, so it must not
// block.
func (cq *CQ) SetEventHandler(f func()) { cq.event = f }

// ReqNotify arms the CQ for one completion event (ibv_req_notify_cq): the
// next completion added, or with solicitedOnly the next one of a message
// that carried the solicited-event bit or that failed (IBA 11.4.2.2, as
// rxe and real HCAs count flushes and errors). Completions already in the
// CQ do not count, so a consumer polls once more after arming. A request
// for any completion widens a solicited-only one; the reverse keeps it.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if cq.closed.Load() {
		return ErrClosed
	}
	cq.mu.Lock()
	if !solicitedOnly {
		cq.armed = armNext
	} else if cq.armed == armNone {
		cq.armed = armSolicited
	}
	cq.mu.Unlock()
	return nil
}

// fires reports whether adding wc raises the armed event, and disarms the
// CQ if so. It runs under cq.mu.
func (cq *CQ) fires(wc *WC, solicited bool) bool {
	switch cq.armed {
	case armNone:
		return false
	case armSolicited:
		if !solicited && wc.Status == ib.WCSuccess {
			return false
		}
	}
	cq.armed = armNone
	return true
}
