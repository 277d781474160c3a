package verbs

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/mem"
)

// ErrInvalidArgument reports a bad argument to a control verb.
var ErrInvalidArgument = errors.New("invalid argument")

// PD is a protection domain (struct ibv_pd): memory regions and QPs of one
// PD can reach each other, those of different PDs cannot.
type PD struct {
	dev *Device
	id  uint32
}

// Device returns the PD's device.
func (pd *PD) Device() *Device { return pd.dev }

// MR is a registered memory region (struct ibv_mr). Its address is the
// real virtual address of its first byte, as on hardware, so addresses and
// keys can be sent to any peer.
type MR struct {
	pd  *PD
	r   *mem.Region
	buf []byte
}

// RegMR registers buf with the given access rights (ibv_reg_mr). buf may be
// any byte slice or the memory of AllocBuffer; it must stay alive and must
// not move until Dereg.
func (pd *PD) RegMR(buf []byte, access AccessFlags) (*MR, error) {
	if err := access.ValidForMR(); err != nil {
		return nil, fmt.Errorf("reg MR: %w", err)
	}
	r, err := pd.dev.e.MRs().Register(pd.id, buf, access)
	if err != nil {
		return nil, fmt.Errorf("reg MR: %w", err)
	}
	return &MR{pd: pd, r: r, buf: buf}, nil
}

// LKey returns the local key.
func (mr *MR) LKey() LKey { return LKey(mr.r.Key()) }

// RKey returns the remote key (the same value as the local key).
func (mr *MR) RKey() RKey { return RKey(mr.r.Key()) }

// Addr returns the virtual address of the first byte.
func (mr *MR) Addr() uint64 { return mr.r.Addr() }

// Len returns the length in bytes.
func (mr *MR) Len() int { return mr.r.Len() }

// Bytes returns the registered memory.
func (mr *MR) Bytes() []byte { return mr.buf }

// SGE returns the scatter/gather element for n bytes at offset off.
func (mr *MR) SGE(off, n int) SGE {
	return SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()}
}

// Dereg deregisters the region (ibv_dereg_mr). Its keys are invalid when
// Dereg returns, also for packets already in flight; accesses in progress
// finish first.
func (mr *MR) Dereg() error {
	if err := mr.pd.dev.e.MRs().Deregister(mr.r); err != nil {
		return fmt.Errorf("dereg MR: %w", err)
	}
	return nil
}

// Buffer is page-aligned memory outside the Go heap, for RDMA buffers.
type Buffer = mem.Buffer

// AllocBuffer returns n bytes of page-aligned memory outside the Go heap:
// shareable (memfd), locked in RAM where the memlock limit allows, and not
// inherited by child processes. Free it after deregistering its MRs.
func AllocBuffer(n int) (*Buffer, error) {
	b, err := mem.Alloc(n)
	if err != nil {
		return nil, fmt.Errorf("alloc buffer: %w", err)
	}
	return b, nil
}

// QPInitAttr describes a queue pair to create (struct ibv_qp_init_attr).
type QPInitAttr struct {
	Type           QPType
	SendCQ, RecvCQ *CQ
	Cap            QPCap
	// SQSigAll makes every send work request generate a completion.
	SQSigAll bool
}

// CreateQP creates a queue pair in the RESET state (ibv_create_qp). Only RC
// is supported so far.
func (pd *PD) CreateQP(attr *QPInitAttr) (*QP, error) {
	if attr.SendCQ == nil || attr.RecvCQ == nil {
		return nil, fmt.Errorf("create QP: %w: send and receive CQs are required", ErrInvalidArgument)
	}
	e, err := pd.dev.e.CreateQP(pd.id, &engine.QPInitAttr{
		Type: attr.Type, SendCQ: attr.SendCQ.c, RecvCQ: attr.RecvCQ.c, Cap: attr.Cap, SQSigAll: attr.SQSigAll,
	})
	if err != nil {
		return nil, err
	}
	return &QP{e: e, pd: pd}, nil
}

// CQ is a completion queue (struct ibv_cq).
type CQ struct {
	c *engine.CQ
}

// Poll moves up to len(wcs) completions into wcs and returns how many
// (ibv_poll_cq). It returns an error only if completions were lost because
// the CQ was full.
func (cq *CQ) Poll(wcs []WC) (int, error) { return cq.c.Poll(wcs) }

// Notify returns a channel that receives a value after new completions
// arrive, for waiting without spinning; poll again after each wake-up.
func (cq *CQ) Notify() <-chan struct{} { return cq.c.Notify() }

// spinPolls is how many empty polls Wait makes, yielding the processor
// between them, before it sleeps on Notify. The NIC is goroutines of this
// process, so a poller that never yields delays the very packets it waits
// for (measured against rxe on two cores: a 3.4 ms median ACK delay).
const spinPolls = 64

// Wait is Poll that returns only with at least one completion, an error,
// or, once ctx is done, ctx's error. It spins briefly before it sleeps.
func (cq *CQ) Wait(ctx context.Context, wcs []WC) (int, error) {
	for i := 0; ; i++ {
		n, err := cq.Poll(wcs)
		if n > 0 || err != nil {
			return n, err
		}
		if i < spinPolls {
			runtime.Gosched()
			continue
		}
		select {
		case <-cq.Notify():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Cap returns the number of completions the CQ holds.
func (cq *CQ) Cap() int { return cq.c.Cap() }

// QP is a queue pair (struct ibv_qp).
type QP struct {
	e  *engine.QP
	pd *PD
}

// QPN returns the queue pair number.
func (qp *QP) QPN() QPN { return qp.e.QPN() }

// State returns the current state.
func (qp *QP) State() QPState { return qp.e.State() }

// Cap returns the capacities, with queue sizes as allocated.
func (qp *QP) Cap() QPCap { return qp.e.Cap() }

// Modify changes attributes and state (ibv_modify_qp). The transition and
// the attributes in mask must follow the IBA state table.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error { return qp.e.Modify(attr, mask) }

// Query returns the current attributes (ibv_query_qp).
func (qp *QP) Query() QPAttr { return qp.e.Query() }

// PostSend posts a chain of send work requests (ibv_post_send).
func (qp *QP) PostSend(wr *SendWR) error { return qp.e.PostSend(wr) }

// PostRecv posts a chain of receive work requests (ibv_post_recv).
func (qp *QP) PostRecv(wr *RecvWR) error { return qp.e.PostRecv(wr) }

// Destroy destroys the queue pair (ibv_destroy_qp).
func (qp *QP) Destroy() error { return qp.e.Destroy() }
