package verbs

import (
	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// PD is a protection domain (struct ibv_pd): memory regions and QPs of one
// PD can reach each other, those of different PDs cannot.
type PD struct {
	dev *Device
	id  uint32

	// Guarded by dev.mu.
	closed                   bool
	mrs, mws, qps, srqs, ahs int // open MRs, MWs, QPs, SRQs and AHs created in the PD
}

// Device returns the PD's device.
func (pd *PD) Device() *Device { return pd.dev }

// Close releases the PD (ibv_dealloc_pd). It fails with ErrBusy while MRs,
// MWs, QPs, SRQs or AHs of the PD are open; closing it again returns nil.
func (pd *PD) Close() error {
	pd.dev.mu.Lock()
	defer pd.dev.mu.Unlock()
	if pd.closed {
		return nil
	}
	if pd.mrs > 0 || pd.mws > 0 || pd.qps > 0 || pd.srqs > 0 || pd.ahs > 0 {
		return errorf("close PD", "%w: %d MR(s), %d MW(s), %d QP(s), %d SRQ(s) and %d AH(s) still open",
			ErrBusy, pd.mrs, pd.mws, pd.qps, pd.srqs, pd.ahs)
	}
	pd.closed = true
	return nil
}

// usable returns ErrClosed if the PD or its device is closed, else nil.
// pd.dev.mu must be held.
func (pd *PD) usable() error {
	if pd.closed || pd.dev.closed {
		return ErrClosed
	}
	return nil
}

// RegMR registers buf with the given access rights (ibv_reg_mr). buf may be
// any byte slice — make([]byte, n) will do: the MR holds it, so it stays
// alive, and Go does not move what it allocates — or the memory of a
// Buffer (page-aligned, outside the heap), which must stay open until the
// MR is closed. The MR is that memory, not a copy: what the program writes
// into buf is what a peer READs, and an append that reallocates buf
// leaves the MR on the old array.
func (pd *PD) RegMR(buf []byte, access AccessFlags) (*MR, error) {
	const verb = "reg MR"
	if len(buf) == 0 {
		return nil, errorf(verb, "%w: empty buffer", ErrInvalidArgument)
	}
	if err := ib.AccessFlags(access).ValidForMR(); err != nil {
		return nil, errorf(verb, "%w", err)
	}
	pd.dev.mu.Lock()
	defer pd.dev.mu.Unlock()
	if err := pd.usable(); err != nil {
		return nil, errorf(verb, "%w", err)
	}
	r, err := pd.dev.e.MRs().Register(pd.id, buf, ib.AccessFlags(access))
	if err != nil {
		return nil, errorf(verb, "%w", err)
	}
	pd.mrs++
	return &MR{pd: pd, r: r, buf: buf}, nil
}

// CreateQP creates a queue pair in the RESET state (ibv_create_qp): RC, UC
// or UD. Both CQs must belong to the PD's device.
func (pd *PD) CreateQP(attr *QPInitAttr) (*QP, error) {
	const verb = "create QP"
	switch {
	case attr == nil:
		return nil, errorf(verb, "%w: no QPInitAttr", ErrInvalidArgument)
	case attr.SendCQ == nil:
		return nil, errorf(verb, "%w: no send CQ", ErrInvalidArgument)
	case attr.RecvCQ == nil:
		return nil, errorf(verb, "%w: no receive CQ", ErrInvalidArgument)
	case attr.SendCQ.dev != pd.dev:
		return nil, errorf(verb, "%w: send CQ belongs to another device", ErrInvalidArgument)
	case attr.RecvCQ.dev != pd.dev:
		return nil, errorf(verb, "%w: receive CQ belongs to another device", ErrInvalidArgument)
	case attr.SRQ != nil && attr.SRQ.pd.dev != pd.dev:
		return nil, errorf(verb, "%w: SRQ belongs to another device", ErrInvalidArgument)
	}
	pd.dev.mu.Lock()
	defer pd.dev.mu.Unlock()
	if err := pd.usable(); err != nil {
		return nil, errorf(verb, "%w", err)
	}
	if attr.SendCQ.closed || attr.RecvCQ.closed {
		return nil, errorf(verb, "CQ: %w", ErrClosed)
	}
	init := &engine.QPInitAttr{
		Type: ib.QPType(attr.Type), SendCQ: attr.SendCQ.c, RecvCQ: attr.RecvCQ.c,
		Cap: engine.QPCap(attr.Cap), SQSigAll: attr.SQSigAll,
	}
	if attr.SRQ != nil {
		if attr.SRQ.closed {
			return nil, errorf(verb, "SRQ: %w", ErrClosed)
		}
		init.SRQ = attr.SRQ.e
	}
	e, err := pd.dev.e.CreateQP(pd.id, init)
	if err != nil {
		return nil, errorf(verb, "%w", err)
	}
	pd.qps++
	attr.SendCQ.qps++
	attr.RecvCQ.qps++
	if attr.SRQ != nil {
		attr.SRQ.qps++
	}
	qp := &QP{e: e, pd: pd, sendCQ: attr.SendCQ, recvCQ: attr.RecvCQ, srq: attr.SRQ}
	pd.dev.async.add(e, qp)
	return qp, nil
}
