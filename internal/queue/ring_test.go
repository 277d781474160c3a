package queue

import (
	"sync"
	"testing"
)

func TestRingFIFO(t *testing.T) {
	r := New[int](3)
	if r.Cap() != 4 {
		t.Fatalf("Cap = %d, want 4", r.Cap())
	}
	if r.Peek() != nil {
		t.Fatal("Peek on empty ring")
	}
	for i := range 4 {
		s := r.Reserve()
		if s == nil {
			t.Fatalf("Reserve %d failed", i)
		}
		*s = i
		r.Commit()
	}
	if r.Reserve() != nil || r.Len() != 4 {
		t.Fatalf("full ring: Reserve succeeded or Len %d", r.Len())
	}
	for i := range 4 {
		if got := *r.At(r.Head() + uint32(i)); got != i {
			t.Errorf("At(%d) = %d", i, got)
		}
	}
	for i := range 4 {
		if got := *r.Peek(); got != i {
			t.Fatalf("Peek = %d, want %d", got, i)
		}
		r.Pop()
	}
	if r.Len() != 0 || r.Peek() != nil {
		t.Fatal("ring not empty")
	}
	defer func() {
		if recover() == nil {
			t.Error("Pop on empty ring did not panic")
		}
	}()
	r.Pop()
}

func TestRingWrapsIndexes(t *testing.T) {
	r := New[uint32](2)
	r.head.Store(^uint32(0) - 1) // just before the counters wrap
	r.tail.Store(^uint32(0) - 1)
	for i := range uint32(100) {
		*r.Reserve() = i
		r.Commit()
		if got := *r.Peek(); got != i || r.Len() != 1 {
			t.Fatalf("step %d: got %d len %d", i, got, r.Len())
		}
		r.Pop()
	}
}

func TestRingReset(t *testing.T) {
	r := New[int](4)
	*r.Reserve() = 1
	r.Commit()
	r.Reset()
	if r.Len() != 0 || r.Reserve() == nil {
		t.Fatal("Reset did not empty the ring")
	}
}

// TestRingConcurrent runs one producer and one consumer without locks; under
// -race this checks the publication order.
func TestRingConcurrent(t *testing.T) {
	const n = 100000
	r := New[[2]int](64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; {
			if s := r.Reserve(); s != nil {
				*s = [2]int{i, -i}
				r.Commit()
				i++
			}
		}
	}()
	for i := 0; i < n; {
		if s := r.Peek(); s != nil {
			if s[0] != i || s[1] != -i {
				t.Fatalf("entry %d read as %v", i, *s)
			}
			r.Pop()
			i++
		}
	}
	wg.Wait()
}

func BenchmarkRing(b *testing.B) {
	r := New[[8]uint64](256)
	b.ReportAllocs()
	for b.Loop() {
		s := r.Reserve()
		s[0] = 1
		r.Commit()
		_ = r.Peek()[0]
		r.Pop()
	}
}

// TestRingGrow: a full ring grows, keeping its entries in order at the
// same indexes, across the counters' wrap, and takes more.
func TestRingGrow(t *testing.T) {
	r := New[uint32](4)
	r.head.Store(^uint32(0) - 1) // the entries straddle the wrap
	r.tail.Store(^uint32(0) - 1)
	for i := range uint32(4) {
		*r.Reserve() = i
		r.Commit()
	}
	r.Pop() // the ring is full again with 1..4
	*r.Reserve() = 4
	r.Commit()
	r.Grow()
	if r.Cap() != 8 || r.Len() != 4 {
		t.Fatalf("after Grow: Cap %d Len %d, want 8 and 4", r.Cap(), r.Len())
	}
	for i := range uint32(4) {
		if got := *r.At(r.Head() + i); got != i+1 {
			t.Errorf("At(Head+%d) = %d, want %d", i, got, i+1)
		}
	}
	for i := uint32(5); i < 9; i++ {
		s := r.Reserve()
		if s == nil {
			t.Fatalf("Reserve of entry %d in the grown ring failed", i)
		}
		*s = i
		r.Commit()
	}
	if r.Reserve() != nil {
		t.Error("the grown ring took a ninth entry")
	}
	for want := uint32(1); want < 9; want++ {
		if got := *r.Peek(); got != want {
			t.Fatalf("Peek = %d, want %d", got, want)
		}
		r.Pop()
	}
}

// TestRingShrink: a ring shrinks to the power of two that holds its
// entries and what was asked, keeping entries, order and indexes across
// the counters' wrap, and then takes no more than its new capacity.
func TestRingShrink(t *testing.T) {
	r := New[uint32](64)
	r.head.Store(^uint32(0) - 2) // the entries straddle the wrap
	r.tail.Store(^uint32(0) - 2)
	for i := range uint32(5) {
		*r.Reserve() = i
		r.Commit()
	}
	r.Shrink(2) // 5 entries need 8 slots
	if r.Cap() != 8 || r.Len() != 5 {
		t.Fatalf("after Shrink(2) with 5 entries: Cap %d Len %d, want 8 and 5", r.Cap(), r.Len())
	}
	for i := range uint32(5) {
		if got := *r.Peek(); got != i {
			t.Fatalf("entry %d after the shrink: %d", i, got)
		}
		r.Pop()
	}
	r.Shrink(4)
	if r.Cap() != 4 {
		t.Fatalf("the empty ring shrank to %d slots, want 4", r.Cap())
	}
	for i := range uint32(4) {
		*r.Reserve() = 10 + i
		r.Commit()
	}
	if r.Reserve() != nil {
		t.Error("the shrunk ring took a fifth entry")
	}
	r.Shrink(16) // larger than it is: left alone
	if r.Cap() != 4 || *r.Peek() != 10 {
		t.Errorf("Shrink(16) of a 4-slot ring: Cap %d, first %d", r.Cap(), *r.Peek())
	}
}
