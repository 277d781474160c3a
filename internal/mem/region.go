package mem

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
)

// Region is a registered memory region (an MR), or the table entry of a
// bound memory window (see Window). A registered region's key, PD,
// rights and memory never change after Register, so Acquire reads them
// without locks; only the reference count moves. A window's entry is
// rewritten by each bind, while no Acquire can reach it (window.go).
type Region struct {
	key    Key
	pd     uint32
	qp     uint32 // a window's entry's: the QP it is bound to, or anyQP; 0 for a registered region
	access ib.AccessFlags
	addr   uint64  // AddrOf(buf): the real virtual address, as on hardware
	buf    []byte  // also keeps heap memory alive while registered
	win    *Window // the window whose entry this is, nil for a registered region; never changes

	// refs counts the Refs in flight. It sits on its own cache line
	// because every Acquire writes it while every Acquire on every core
	// reads the fields above; sharing a line would make those reads miss.
	_    [64]byte
	refs atomic.Int64
	// windows counts the windows bound to the region, guarded by
	// Table.mu: a region with windows cannot be deregistered.
	windows int
}

// anyQP is the qp of a type 1 window's entry: usable through any QP of
// its PD, but, like every window, not as an L_Key. QP numbers have 24
// bits, so no QP has it.
const anyQP = 1 << 24

// Key returns the region's key, used both as L_Key and as R_Key.
func (r *Region) Key() Key { return r.key }

// Addr returns the virtual address of the region's first byte.
func (r *Region) Addr() uint64 { return r.addr }

// Len returns the region's length in bytes.
func (r *Region) Len() int { return len(r.buf) }

// PD returns the protection-domain id the region was registered with.
func (r *Region) PD() uint32 { return r.pd }

// Access returns the region's access rights.
func (r *Region) Access() ib.AccessFlags { return r.access }

// offset returns the offset of va in the region if [va, va+length) lies
// inside it (rxe mr_check_range). It never computes va+length or
// addr+len, so a request near 2^64 cannot wrap around into range. An
// empty range is inside when va is in [addr, addr+len], end included.
func (r *Region) offset(va, length uint64) (uint64, bool) {
	if va < r.addr {
		return 0, false
	}
	off, n := va-r.addr, uint64(len(r.buf))
	if length > n || off > n-length {
		return 0, false
	}
	return off, true
}

// drain waits until no Ref to r is held. Accesses are short copies, so it
// first yields and only then sleeps, with a capped backoff so a long READ
// over a large region does not keep a core busy.
func (r *Region) drain() {
	const spins = 64
	sleep := 10 * time.Microsecond
	for i := 0; r.refs.Load() != 0; i++ {
		if i < spins {
			runtime.Gosched()
			continue
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, time.Millisecond)
	}
}
