package verbs

import (
	"errors"
	"math"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/mem"
)

// MR is a registered memory region (struct ibv_mr). Its address is the
// real virtual address of its first byte, as on hardware, so addresses and
// keys can be sent to any peer.
type MR struct {
	// r comes first: a SendWR's BindMW hands the engine a *MR as a
	// **mem.Region (convert_unsafe.go).
	r   *mem.Region
	pd  *PD
	buf []byte
	// closed is set under pd.dev.mu; SGE reads it without the lock.
	closed atomic.Bool
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

// SGE returns the scatter/gather element for the n bytes at offset off of
// the region. For a range that is not inside the region (off or n
// negative, off+n past Len, n over 4 GiB), or once the MR is closed, it returns the zero
// SGE, whose lkey 0 names no region: posting it fails at once with
// ErrInvalidSGE, so a bad range is an error where it is used, never an
// address outside the region.
func (mr *MR) SGE(off, n int) SGE {
	if off < 0 || n < 0 || n > math.MaxUint32 || off > mr.Len()-n || mr.closed.Load() {
		return SGE{}
	}
	return SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()}
}

// Close deregisters the region (ibv_dereg_mr). Its keys are invalid when
// Close returns, also for packets already in flight; accesses in progress
// finish first. It fails with ErrBusy while memory windows are bound to
// the region (invalidate or close them first). Closing it again returns
// nil. The memory stays the caller's.
func (mr *MR) Close() error {
	dev := mr.pd.dev
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if mr.closed.Load() {
		return nil
	}
	if err := dev.e.MRs().Deregister(mr.r); errors.Is(err, mem.ErrWindowsBound) {
		return errorf("dereg MR", "%w: %w", ErrBusy, err)
	} else if err != nil {
		return errorf("dereg MR", "%w", err)
	}
	mr.closed.Store(true)
	mr.pd.mrs--
	return nil
}
