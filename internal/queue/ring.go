// Package queue provides the rings that stand in for a NIC's work and
// completion queues in host memory: slots are allocated up front and
// filled and read in place, so posting and polling copy one entry and
// allocate nothing; a ring grows only when its producer asks (Grow), and
// shrinks only when its owner asks with both sides kept out (Shrink).
package queue

import "sync/atomic"

// Ring is a FIFO of preallocated slots with a power-of-two capacity. One
// producer and one consumer may use it concurrently without locks: the
// producer fills the slot from Reserve and publishes it with Commit, the
// consumer reads Peek (or At) and releases with Pop. Callers serialise
// multiple producers or consumers themselves.
//
// Indexes are free-running uint32 counters; a slot's position is its index
// modulo the capacity, and Len is tail − head, which stays correct across
// wrap-around.
type Ring[T any] struct {
	slots []T
	mask  uint32
	head  atomic.Uint32 // next slot the consumer reads
	tail  atomic.Uint32 // next slot the producer fills
}

// New returns a ring with room for at least n entries (n ≥ 1), rounded up
// to a power of two.
func New[T any](n int) *Ring[T] {
	c := pow2AtLeast(n)
	return &Ring[T]{slots: make([]T, c), mask: uint32(c - 1)}
}

// pow2AtLeast returns the smallest power of two that is at least n.
func pow2AtLeast(n int) int {
	c := 1
	for c < n {
		c <<= 1
	}
	return c
}

// Cap returns the number of slots.
func (r *Ring[T]) Cap() int { return len(r.slots) }

// Len returns the number of committed, unpopped entries.
func (r *Ring[T]) Len() int { return int(r.tail.Load() - r.head.Load()) }

// Head returns the index of the oldest entry.
func (r *Ring[T]) Head() uint32 { return r.head.Load() }

// Tail returns the index the next committed entry will have.
func (r *Ring[T]) Tail() uint32 { return r.tail.Load() }

// At returns the slot of index i. The caller must know i is in [Head, Tail)
// for reading, or is the reserved slot for writing.
func (r *Ring[T]) At(i uint32) *T { return &r.slots[i&r.mask] }

// Reserve returns the slot at the tail for the producer to fill, or nil if
// the ring is full. Nothing is visible to the consumer until Commit.
func (r *Ring[T]) Reserve() *T {
	t := r.tail.Load()
	if t-r.head.Load() >= uint32(len(r.slots)) {
		return nil
	}
	return &r.slots[t&r.mask]
}

// Commit publishes the slot returned by the last Reserve.
func (r *Ring[T]) Commit() { r.tail.Add(1) }

// Peek returns the oldest entry, or nil if the ring is empty.
func (r *Ring[T]) Peek() *T {
	h := r.head.Load()
	if h == r.tail.Load() {
		return nil
	}
	return &r.slots[h&r.mask]
}

// Pop releases the oldest entry; the ring must not be empty.
func (r *Ring[T]) Pop() {
	if r.head.Load() == r.tail.Load() {
		panic("queue: Pop on an empty ring")
	}
	r.head.Add(1)
}

// Reset empties the ring. Both sides must be quiescent.
func (r *Ring[T]) Reset() { r.head.Store(r.tail.Load()) }

// Grow doubles the ring's capacity, keeping its entries, their order and
// their indexes. The producer calls it, while the consumer is excluded
// (the caller's lock): a ring that starts small costs memory only where
// bursts come.
func (r *Ring[T]) Grow() { r.resize(2 * len(r.slots)) }

// Shrink lowers the ring's capacity to the smallest power of two that is
// at least n and holds its entries, keeping them, their order and their
// indexes; a ring already that small is left alone. Both the producer and
// the consumer must be excluded (the caller's locks): a ring that grew
// for a burst gives its memory back once the burst is over.
func (r *Ring[T]) Shrink(n int) {
	if c := pow2AtLeast(max(n, r.Len())); c < len(r.slots) {
		r.resize(c)
	}
}

// resize moves the entries into c slots, a power of two that holds them.
func (r *Ring[T]) resize(c int) {
	slots := make([]T, c)
	mask := uint32(c - 1)
	for i := r.head.Load(); i != r.tail.Load(); i++ {
		slots[i&mask] = r.slots[i&r.mask]
	}
	r.slots, r.mask = slots, mask
}
