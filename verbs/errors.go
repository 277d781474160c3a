package verbs

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
)

// The errors a program may test for with errors.Is. Every error a verb
// returns wraps one of them (or an error of the operating system), behind
// "verbs: ", the verb and what was wrong: "verbs: create QP: invalid
// argument: send CQ belongs to another device". The values are the very
// ones the engine underneath returns.
var (
	// ErrInvalidArgument: a value out of range or inconsistent (EINVAL).
	ErrInvalidArgument = engine.ErrInvalidArgument
	// ErrNotSupported: valid in libibverbs, not implemented by this
	// device (EOPNOTSUPP), such as resizing a QP.
	ErrNotSupported = engine.ErrNotSupported
	// ErrClosed: the object, or its device, was closed.
	ErrClosed = engine.ErrClosed
	// ErrBusy: closing an object still in use, a PD with MRs, MWs, QPs,
	// SRQs or AHs, a CQ with QPs, an MR with memory windows bound to it
	// (EBUSY); close or invalidate those first.
	ErrBusy = errors.New("resource busy")

	// ErrInvalidAccessFlags: access flags a memory region cannot have
	// (PD.RegMR).
	ErrInvalidAccessFlags = ib.ErrInvalidAccessFlags
	// ErrMRTableFull: the device has DeviceAttr.MaxMR regions (PD.RegMR).
	ErrMRTableFull = mem.ErrTableFull
	// ErrBadCapability: QPInitAttr.Cap beyond the device's limits
	// (PD.CreateQP).
	ErrBadCapability = engine.ErrBadCapability
	// ErrInvalidTransition: QP.Modify to a state the QP cannot reach from
	// its current one (IBA 10.3.1).
	ErrInvalidTransition = ib.ErrInvalidTransition
	// ErrInvalidAttrMask: QP.Modify's mask lacks an attribute the
	// transition requires, or names one it does not accept.
	ErrInvalidAttrMask = ib.ErrInvalidAttrMask

	// The errors of QP.PostSend and QP.PostRecv, each inside a PostError.

	// ErrQPState: the QP's state does not allow posting (sends need RTS
	// or later, receives INIT or later).
	ErrQPState = engine.ErrQPState
	// ErrQueueFull: the work queue holds QPCap.MaxSendWR (MaxRecvWR)
	// uncompleted requests (ENOMEM in libibverbs).
	ErrQueueFull = engine.ErrQueueFull
	// ErrTooManySGE: more SGEs than QPCap.MaxSendSGE (MaxRecvSGE).
	ErrTooManySGE = engine.ErrTooManySGE
	// ErrInvalidSGE: an SGE with lkey 0, which MR.SGE returns for a range
	// outside its region or a closed region.
	ErrInvalidSGE = engine.ErrInvalidSGE
	// ErrBadOpcode: an opcode the QP does not support: on a UC QP only
	// SEND and RDMA WRITE (with immediate), on a UD QP only SEND (with
	// immediate).
	ErrBadOpcode = engine.ErrBadOpcode
	// ErrInvalidAH: a UD send whose SendWR.AH is nil, closed or of
	// another PD than the QP's.
	ErrInvalidAH = engine.ErrInvalidAH
	// ErrMessageSize: a message longer than DeviceAttr.MaxMessageSize.
	ErrMessageSize = engine.ErrMessageSize
	// ErrAtomicLength: an atomic whose SGEs do not total 8 bytes.
	ErrAtomicLength = engine.ErrAtomicLength
	// ErrAtomicAlign: an atomic whose RemoteAddr is not 8-byte aligned.
	ErrAtomicAlign = engine.ErrAtomicAlign
	// ErrInlineSize: inline data longer than QPCap.MaxInlineData.
	ErrInlineSize = engine.ErrInlineSize
	// ErrInlineOpcode: SendInline on an operation other than SEND and
	// RDMA WRITE.
	ErrInlineOpcode = engine.ErrInlineOpcode
	// ErrInlineAccess: inline data not inside a registered region of the
	// QP's PD (it is read through its lkey when posted).
	ErrInlineAccess = engine.ErrInlineAccess
	// ErrNoMW: a WRBindMW without a window (SendWR.BindMW.MW).
	ErrNoMW = engine.ErrNoMW
	// ErrLocalOpData: a WRBindMW or WRLocalInv with SGEs or SendInline.
	ErrLocalOpData = engine.ErrLocalOpData

	// ErrCQOverrun: CQ.Poll found completions lost because the CQ was
	// full (IBV_EVENT_CQ_ERR); the CQ stays in error.
	ErrCQOverrun = engine.ErrCQOverrun
)

// PostError is the error of QP.PostSend and QP.PostRecv: which work
// request of the chain was not posted, and why. The requests before it
// were posted; it and those after it were not. Err is one of the posting
// errors above.
type PostError struct {
	// Verb is "post send", "post recv" or "post SRQ recv".
	Verb string
	// QPN is the QP posted to; 0 for an SRQ.
	QPN QPN
	// Index is the position of the failed request in the chain, from 0.
	Index int
	// Err says why.
	Err error
}

func (e *PostError) Error() string {
	if e.QPN == 0 {
		return fmt.Sprintf("verbs: %s: work request %d of the chain: %v", e.Verb, e.Index, e.Err)
	}
	return fmt.Sprintf("verbs: %s: QP 0x%06x: work request %d of the chain: %v", e.Verb, uint32(e.QPN), e.Index, e.Err)
}

// Unwrap returns Err.
func (e *PostError) Unwrap() error { return e.Err }

// errorf returns the error of verb: "verbs: verb: " and the formatted
// reason, which wraps a sentinel with %w.
func errorf(verb, format string, args ...any) error {
	return fmt.Errorf("verbs: "+verb+": "+format, args...)
}
