package verbs

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
)

// MWType is the type of a memory window (enum ibv_mw_type).
type MWType uint8

// Memory window types.
const (
	// MWType1 windows are bound with QP.BindMW (ibv_bind_mw), may be
	// rebound at any time and are reached through any QP of their PD.
	MWType1 MWType = 1 // IBV_MW_TYPE_1
	// MWType2 windows are bound with a WRBindMW work request, invalidated
	// with WRLocalInv or by the peer's WRSendWithInv, and reached only
	// through the QP that bound them (type 2B).
	MWType2 MWType = 2 // IBV_MW_TYPE_2
)

// String returns the libibverbs name ("IBV_MW_TYPE_2"), or "MWType(n)".
func (t MWType) String() string { return ib.MWType(t).String() }

// MW is a memory window (struct ibv_mw): an rkey of its own that gives a
// peer remote access, with rights of its own, to a range of a memory
// region it is bound to. Binding and invalidating a window is cheap and
// ordered with the QP's other work, so a program can grant a peer access
// to one buffer for one operation and take it back when the operation is
// done, instead of handing out the rkey of a whole region for ever.
type MW struct {
	// w comes first: a SendWR's BindMW hands the engine a *MW as a
	// **mem.Window (convert_unsafe.go).
	w  *mem.Window
	pd *PD

	closed bool // guarded by pd.dev.mu
}

// MWBindInfo is what a window is bound to (struct ibv_mw_bind_info):
// Length bytes at Addr of MR, with the remote rights in MWAccessFlags
// (AccessRemoteRead, AccessRemoteWrite, AccessRemoteAtomic). The MR must
// have been registered with AccessMWBind, and with AccessLocalWrite for a
// window that may be written or used by atomics.
type MWBindInfo struct {
	MR            *MR
	Addr          uint64
	Length        uint64
	MWAccessFlags AccessFlags
}

// BindMW is the bind of a WRBindMW work request (ibv_send_wr.bind_mw):
// the type 2 window, the rkey it gets, of which the window keeps its
// index and takes the low 8 bits (IncRKey(mw.RKey()) gives the next one),
// and what it is bound to.
type BindMW struct {
	MW       *MW
	RKey     RKey
	BindInfo MWBindInfo
}

// MWBind is a bind of a type 1 window by QP.BindMW (struct ibv_mw_bind).
// BindInfo with no MR and zero Length unbinds the window.
type MWBind struct {
	WRID      uint64
	SendFlags SendFlags
	BindInfo  MWBindInfo
}

// IncRKey returns rkey with its low 8 bits, the key a window's user
// chooses, incremented (ibv_inc_rkey): the rkey for a window's next bind.
func IncRKey(rkey RKey) RKey { return rkey&^0xff | (rkey+1)&0xff }

// AllocMW allocates an unbound memory window of type t in the PD
// (ibv_alloc_mw). Its rkey reaches nothing until it is bound.
func (pd *PD) AllocMW(t MWType) (*MW, error) {
	const verb = "alloc MW"
	pd.dev.mu.Lock()
	defer pd.dev.mu.Unlock()
	if err := pd.usable(); err != nil {
		return nil, errorf(verb, "%w", err)
	}
	if !ib.MWType(t).Valid() {
		return nil, errorf(verb, "%w: type %d", ErrInvalidArgument, t)
	}
	w, err := pd.dev.e.MRs().AllocWindow(pd.id, ib.MWType(t))
	if err != nil {
		return nil, errorf(verb, "%w", err)
	}
	pd.mws++
	return &MW{w: w, pd: pd}, nil
}

// RKey returns the window's rkey (ibv_mw.rkey) as the binds posted so far
// leave it: a bind changes it when it is posted, and the new rkey reaches
// memory once the bind has executed, which its completion tells. A bind
// that fails with WCMWBindErr leaves the window as it was, but not this
// value, as in libibverbs.
func (mw *MW) RKey() RKey { return RKey(mw.w.Key()) }

// Type returns the window's type.
func (mw *MW) Type() MWType { return MWType(mw.w.Type()) }

// Close deallocates the window (ibv_dealloc_mw). A bound window is
// invalidated first: when Close returns, no access through it is in
// progress, and its region may be closed. Binds of it still queued fail.
// Closing it again returns nil.
func (mw *MW) Close() error {
	dev := mw.pd.dev
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if mw.closed {
		return nil
	}
	if err := mw.w.Free(); err != nil {
		return errorf("dealloc MW", "%w", err)
	}
	mw.closed = true
	mw.pd.mws--
	return nil
}

// BindMW binds a type 1 window (ibv_bind_mw): it posts a bind work
// request, which completes, if signaled or failed, as WCBindMW, and gives
// the window the next rkey (IncRKey) at once: mw.RKey() is the key to give
// the peer, valid once the bind has executed; the previous one is dead
// from then on. A type 2 window is bound with a WRBindMW work request
// instead. Errors are those of PostSend, and ErrInvalidArgument for a
// type 2 window, a range without an MR, or an MR of another PD than the
// window's.
func (qp *QP) BindMW(mw *MW, bind *MWBind) error {
	const verb = "bind MW"
	info := &bind.BindInfo
	switch {
	case mw.Type() != MWType1:
		return errorf(verb, "%w: %v window (bind it with a WRBindMW work request)", ErrInvalidArgument, mw.Type())
	case info.MR == nil && (info.Addr != 0 || info.Length != 0):
		return errorf(verb, "%w: a range without an MR", ErrInvalidArgument)
	case info.MR != nil && info.MR.pd != mw.pd:
		return errorf(verb, "%w: the MR is of another PD than the window", ErrInvalidArgument)
	}
	old := mw.w.Key()
	wr := SendWR{WRID: bind.WRID, Opcode: WRBindMW, Flags: bind.SendFlags,
		BindMW: BindMW{MW: mw, RKey: RKey(mw.w.PostNext()), BindInfo: *info}}
	if i, err := qp.e.PostSend(sendWR(&wr)); err != nil {
		mw.w.Post(old) // nothing was posted
		return &PostError{Verb: verb, QPN: qp.QPN(), Index: i, Err: err}
	}
	return nil
}
