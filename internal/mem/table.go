package mem

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/ib"
)

// Errors returned by Register and Deregister. The caller wraps them with
// the verb's name.
var (
	ErrEmptyBuffer   = errors.New("empty buffer")
	ErrTableFull     = errors.New("memory region table full")
	ErrNotRegistered = errors.New("memory region not registered")
	ErrWindowsBound  = errors.New("memory windows are bound to the region")
)

// Table is the memory-region table of one device: its registered regions
// and its memory windows, each in a slot of its own. Acquire is
// lock-free and may be called from any number of goroutines at once, also
// while regions are registered and deregistered and windows bound and
// invalidated.
type Table struct {
	// slots[i] holds the region with index i, or the entry of the bound
	// window with index i, or nil. Slot 0 stays nil so key 0 is never
	// valid. Read with atomic loads by Acquire; stored only under mu, or,
	// for a window's slot, under the window's mu.
	slots []atomic.Pointer[Region]

	mu      sync.Mutex
	tags    []uint8 // guarded by mu: tag of the latest region or window in each slot
	strides []uint8 // guarded by mu: each slot's odd tag step
	regions pool    // guarded by mu: indices 1 to maxRegions
	windows pool    // guarded by mu: the indices after those
}

// pool hands out the indices [first, end) of the slots.
type pool struct {
	next, end uint32 // lowest index never used yet, one past the last
	free      []uint32
}

// NewTable returns a table for up to maxRegions regions and maxWindows
// windows. It panics unless 1 ≤ maxRegions, 0 ≤ maxWindows and both
// together fit into a key's index (MaxIndex), a configuration error.
func NewTable(maxRegions, maxWindows int) *Table {
	if maxRegions < 1 || maxWindows < 0 || maxRegions > MaxIndex-maxWindows {
		panic("mem: NewTable: limits out of range: " + strconv.Itoa(maxRegions) + " regions, " + strconv.Itoa(maxWindows) + " windows")
	}
	n := 1 + maxRegions + maxWindows
	return &Table{
		slots:   make([]atomic.Pointer[Region], n),
		tags:    make([]uint8, n),
		strides: make([]uint8, n),
		regions: pool{next: 1, end: uint32(1 + maxRegions)},
		windows: pool{next: uint32(1 + maxRegions), end: uint32(n)},
	}
}

// Register adds a region of buf with the given rights in protection
// domain pd and returns it. buf must stay at the same address and stay
// valid (not unmapped) until Deregister returns; the region keeps Go heap
// memory alive itself.
func (t *Table) Register(pd uint32, buf []byte, access ib.AccessFlags) (*Region, error) {
	if len(buf) == 0 {
		return nil, ErrEmptyBuffer
	}
	if err := access.ValidForMR(); err != nil {
		return nil, err
	}
	r := &Region{pd: pd, access: access, addr: AddrOf(buf), buf: buf}
	t.mu.Lock()
	defer t.mu.Unlock()
	index, ok := t.takeIndex(&t.regions)
	if !ok {
		return nil, ErrTableFull
	}
	r.key = makeKey(index, t.tags[index])
	t.slots[index].Store(r)
	return r, nil
}

// takeIndex picks a free slot of p and gives it a new tag. Never-used
// slots go first, then released ones oldest first, so a slot is reused as
// rarely as possible. The tag is the key's variant byte (doc/protocol.md
// §12.2): a fresh slot starts at a random tag and steps by a random odd
// stride at each reuse. An odd step visits all 256 values before it
// repeats, so a stale key needs 256 reuses of its slot to match again,
// and neither the registration order nor one earlier key of a slot tells
// a peer the slot's next tag. t.mu must be held.
func (t *Table) takeIndex(p *pool) (uint32, bool) {
	switch {
	case p.next < p.end:
		index := p.next
		p.next++
		r := rand.Uint32()
		t.tags[index], t.strides[index] = uint8(r), uint8(r>>8)|1
		return index, true
	case len(p.free) > 0:
		index := p.free[0]
		p.free = p.free[1:]
		t.tags[index] += t.strides[index]
		return index, true
	}
	return 0, false
}

// Deregister removes r. Its key stops working before Deregister returns,
// for Acquires that start afterwards; Deregister then waits for the Refs
// already taken on r to be released, so when it returns nothing touches
// r's memory any more and the caller may free it. A Ref that is never
// released makes Deregister wait forever. Deregistering a region twice,
// or one of another table, returns ErrNotRegistered; a region with
// windows bound to it stays registered, and Deregister returns
// ErrWindowsBound (ibv_dereg_mr fails while windows are bound).
func (t *Table) Deregister(r *Region) error {
	if r == nil || r.win != nil {
		return ErrNotRegistered
	}
	index := r.key.Index()
	t.mu.Lock()
	if int(index) >= len(t.slots) || t.slots[index].Load() != r {
		t.mu.Unlock()
		return ErrNotRegistered
	}
	if r.windows > 0 {
		t.mu.Unlock()
		return ErrWindowsBound
	}
	// The slot may be reused at once: the next region gets another tag,
	// and Refs already taken point at r, not at the slot.
	t.slots[index].Store(nil)
	t.regions.free = append(t.regions.free, index)
	t.mu.Unlock()
	r.drain()
	return nil
}

// Acquire checks a local access of length bytes at virtual address va
// through key, in protection domain pd, needing the rights in need (0 for
// a local read, which verbs always allows). It is AcquireRemote for no
// QP: a window's key is not an L_Key (FaultQP).
//
// Acquire takes no lock and does not allocate.
func (t *Table) Acquire(key Key, pd uint32, va, length uint64, need ib.AccessFlags) (Ref, Fault) {
	return t.AcquireRemote(key, pd, 0, va, length, need)
}

// AcquireRemote checks an access of length bytes at virtual address va
// through key, by QP qp of protection domain pd, needing the rights in
// need. The checks and their order are rxe's (doc/protocol.md §12.3 steps
// 8–9, §12.4): key, PD, the QP a type 2 window is bound to, rights,
// bounds; the first that fails is returned. On FaultNone the Ref holds
// the region (or window) until Release and its Bytes are exactly [va,
// va+length). A zero length passes the same checks, with va anywhere in
// [Addr, Addr+Len], and yields an empty slice.
//
// AcquireRemote takes no lock and does not allocate.
func (t *Table) AcquireRemote(key Key, pd, qp uint32, va, length uint64, need ib.AccessFlags) (Ref, Fault) {
	index := key.Index()
	if index >= uint32(len(t.slots)) {
		return Ref{}, FaultBadKey
	}
	slot := &t.slots[index]
	r := slot.Load()
	if r == nil {
		return Ref{}, FaultBadKey
	}
	if r.win == nil {
		// A registered region never changes: it is checked before it is
		// counted, so a refused access writes nothing shared.
		switch {
		case r.key != key:
			return Ref{}, FaultBadKey
		case r.pd != pd:
			return Ref{}, FaultPD
		case need&^r.access != 0:
			return Ref{}, FaultAccess
		}
		off, ok := r.offset(va, length)
		if !ok {
			return Ref{}, FaultBounds
		}
		if !hold(slot, r) {
			return Ref{}, FaultBadKey
		}
		end := off + length
		return Ref{r: r, b: r.buf[off:end:end]}, FaultNone
	}
	// A window's entry is rewritten by each bind (window.go) and is stable
	// only once counted and seen in its slot again: it is counted first,
	// then checked as a region is, and for its QP. Both paths are written
	// out in this one function, which stays a leaf: a call would cost the
	// data path a stack frame per packet.
	if qp == 0 {
		return Ref{}, FaultQP // a window's key is no L_Key
	}
	if !hold(slot, r) {
		return Ref{}, FaultBadKey
	}
	f := FaultNone
	off, ok := r.offset(va, length)
	switch {
	case r.key != key:
		f = FaultBadKey
	case r.pd != pd:
		f = FaultPD
	case r.qp != qp && r.qp != anyQP:
		f = FaultQP // type 2: reached only through the QP that bound it
	case need&^r.access != 0:
		f = FaultAccess
	case !ok:
		f = FaultBounds
	}
	if f != FaultNone {
		r.refs.Add(-1)
		return Ref{}, f
	}
	end := off + length
	return Ref{r: r, b: r.buf[off:end:end]}, FaultNone
}

// hold counts an access to r, the region found in slot, and reports
// whether r is still there. Deregister and unbinding clear the slot and
// then wait for the count; with sequentially consistent atomics either
// they see this increment and wait, or the second load sees the cleared
// slot and the access is refused before touching memory.
func hold(slot *atomic.Pointer[Region], r *Region) bool {
	r.refs.Add(1)
	if slot.Load() != r {
		r.refs.Add(-1)
		return false
	}
	return true
}
