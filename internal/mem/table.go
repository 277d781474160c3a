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
)

// Table is the memory-region table of one device. Acquire is lock-free
// and may be called from any number of goroutines at once, also while
// regions are registered and deregistered.
type Table struct {
	// slots[i] holds the region with index i, or nil. Slot 0 stays nil
	// so key 0 is never valid. Read with atomic loads by Acquire;
	// stored only under mu.
	slots []atomic.Pointer[Region]

	mu      sync.Mutex
	tags    []uint8  // guarded by mu: tag of the latest region in each slot
	strides []uint8  // guarded by mu: each slot's odd tag step
	next    uint32   // guarded by mu: lowest index never used yet
	free    []uint32 // guarded by mu: released indices, oldest first
}

// NewTable returns a table for up to max regions. It panics unless
// 1 ≤ max ≤ MaxIndex, a configuration error.
func NewTable(max int) *Table {
	if max < 1 || max > MaxIndex {
		panic("mem: NewTable: max out of range: " + strconv.Itoa(max))
	}
	return &Table{
		slots:   make([]atomic.Pointer[Region], max+1),
		tags:    make([]uint8, max+1),
		strides: make([]uint8, max+1),
		next:    1,
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
	index, ok := t.takeIndex()
	if !ok {
		return nil, ErrTableFull
	}
	r.key = makeKey(index, t.tags[index])
	t.slots[index].Store(r)
	return r, nil
}

// takeIndex picks a free slot and gives it a new tag. Never-used slots go
// first, then released ones oldest first, so a slot is reused as rarely as
// possible. The tag is the key's variant byte (doc/protocol.md §12.2): a
// fresh slot starts at a random tag and steps by a random odd stride at
// each reuse. An odd step visits all 256 values before it repeats, so a
// stale key needs 256 reuses of its slot to match again, and neither the
// registration order nor one earlier key of a slot tells a peer the
// slot's next tag. t.mu must be held.
func (t *Table) takeIndex() (uint32, bool) {
	switch {
	case int(t.next) < len(t.slots):
		index := t.next
		t.next++
		r := rand.Uint32()
		t.tags[index], t.strides[index] = uint8(r), uint8(r>>8)|1
		return index, true
	case len(t.free) > 0:
		index := t.free[0]
		t.free = t.free[1:]
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
// or one of another table, returns ErrNotRegistered.
func (t *Table) Deregister(r *Region) error {
	if r == nil {
		return ErrNotRegistered
	}
	index := r.key.Index()
	t.mu.Lock()
	if int(index) >= len(t.slots) || t.slots[index].Load() != r {
		t.mu.Unlock()
		return ErrNotRegistered
	}
	// The slot may be reused at once: the next region gets another tag,
	// and Refs already taken point at r, not at the slot.
	t.slots[index].Store(nil)
	t.free = append(t.free, index)
	t.mu.Unlock()
	r.drain()
	return nil
}

// Acquire checks an access of length bytes at virtual address va through
// key, in protection domain pd, needing the rights in need (0 for a local
// read, which verbs always allows). The checks and their order are rxe's
// (doc/protocol.md §12.3 steps 8–9, §12.4): key, PD, rights, bounds; the first
// that fails is returned. On FaultNone the Ref holds the region until
// Release and its Bytes are exactly [va, va+length). A zero length passes
// the same checks, with va anywhere in [Addr, Addr+Len], and yields an
// empty slice.
//
// Acquire takes no lock and does not allocate.
func (t *Table) Acquire(key Key, pd uint32, va, length uint64, need ib.AccessFlags) (Ref, Fault) {
	index := key.Index()
	if index >= uint32(len(t.slots)) {
		return Ref{}, FaultBadKey
	}
	slot := &t.slots[index]
	r := slot.Load()
	if r == nil || r.key != key {
		return Ref{}, FaultBadKey
	}
	if r.pd != pd {
		return Ref{}, FaultPD
	}
	if need&^r.access != 0 {
		return Ref{}, FaultAccess
	}
	off, ok := r.offset(va, length)
	if !ok {
		return Ref{}, FaultBounds
	}
	// Count first, then look again. Deregister clears the slot and then
	// reads the count; with sequentially consistent atomics either it sees
	// this increment and waits, or this load sees the cleared slot and the
	// access is refused before touching memory.
	r.refs.Add(1)
	if slot.Load() != r {
		r.refs.Add(-1)
		return Ref{}, FaultBadKey
	}
	end := off + length
	return Ref{r: r, b: r.buf[off:end:end]}, FaultNone
}
