package mem

import (
	"sync/atomic"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// The data path's budget is zero allocations (STYLE.md rule 15): a checked
// access, its bytes, an atomic, the release, and a refused access.
func TestDataPathZeroAllocs(t *testing.T) {
	tbl := NewTable(4, 0)
	buf := make([]byte, 4096)
	r := mustRegister(t, tbl, pdA, buf, all)
	key, addr := r.Key(), r.Addr()
	var sink atomic.Uint64
	allocs := testing.AllocsPerRun(1000, func() {
		ref, f := tbl.Acquire(key, pdA, addr+64, 8, ib.AccessRemoteAtomic)
		if f != FaultNone {
			panic(f)
		}
		b := ref.Bytes()
		old := FetchAndAdd(b, 1)
		old += CompareAndSwap(b, old+1, 0)
		ref.Release()
		if _, f := tbl.Acquire(key^1, pdA, addr, 8, 0); f != FaultBadKey {
			panic(f)
		}
		if _, f := tbl.Acquire(key, pdA, addr+4090, 8, 0); f != FaultBounds {
			panic(f)
		}
		sink.Store(old)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per access, want 0", allocs)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	tbl := NewTable(1024, 0)
	r := mustRegister(b, tbl, pdA, make([]byte, 1<<16), all)
	key, addr := r.Key(), r.Addr()
	b.ReportAllocs()
	for b.Loop() {
		ref, f := tbl.Acquire(key, pdA, addr+128, 1024, ib.AccessRemoteWrite)
		if f != FaultNone {
			b.Fatal(f)
		}
		ref.Release()
	}
}

func BenchmarkAcquireFault(b *testing.B) {
	tbl := NewTable(1024, 0)
	r := mustRegister(b, tbl, pdA, make([]byte, 1<<16), all)
	key, addr := r.Key(), r.Addr()
	b.ReportAllocs()
	for b.Loop() {
		if _, f := tbl.Acquire(key, pdA, addr, 1<<17, ib.AccessRemoteWrite); f != FaultBounds {
			b.Fatal(f)
		}
	}
}

// One region hit from every CPU: the reference count is the one shared
// write, the worst case for contention.
func BenchmarkAcquireReleaseParallelSameRegion(b *testing.B) {
	tbl := NewTable(1024, 0)
	r := mustRegister(b, tbl, pdA, make([]byte, 1<<16), all)
	key, addr := r.Key(), r.Addr()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ref, f := tbl.Acquire(key, pdA, addr+128, 1024, ib.AccessRemoteWrite)
			if f != FaultNone {
				panic(f)
			}
			ref.Release()
		}
	})
}

// A region per goroutine: lookups share only the read-mostly slot array.
func BenchmarkAcquireReleaseParallelOwnRegion(b *testing.B) {
	tbl := NewTable(1024, 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r, err := tbl.Register(pdA, make([]byte, 1<<16), all)
		if err != nil {
			panic(err)
		}
		key, addr := r.Key(), r.Addr()
		for pb.Next() {
			ref, f := tbl.Acquire(key, pdA, addr+128, 1024, ib.AccessRemoteWrite)
			if f != FaultNone {
				panic(f)
			}
			ref.Release()
		}
	})
}

func BenchmarkFetchAndAdd(b *testing.B) {
	w := word8(0)
	b.ReportAllocs()
	for b.Loop() {
		FetchAndAdd(w, 1)
	}
}

func BenchmarkCompareAndSwap(b *testing.B) {
	w := word8(0)
	b.ReportAllocs()
	var v uint64
	for b.Loop() {
		CompareAndSwap(w, v, v+1)
		v++
	}
}

// Binding a window, an access through it, and its invalidation allocate
// nothing: a window may be bound and invalidated for every I/O.
func TestWindowZeroAllocs(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	b := g.binding(64, 64, ib.AccessRemoteWrite, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		b.Key = w.PostNext()
		if err := w.Bind(b); err != nil {
			panic(err)
		}
		ref, f := g.tbl.AcquireRemote(b.Key, pdA, qpA, b.Addr, 64, ib.AccessRemoteWrite)
		if f != FaultNone {
			panic(f)
		}
		ref.Release()
		if err := g.tbl.Invalidate(b.Key, pdA, qpA); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per bind, access and invalidation, want 0", allocs)
	}
}

// An access through a bound window: counted before it is checked.
func BenchmarkAcquireReleaseWindow(b *testing.B) {
	g := newWindowRig(b)
	w := g.alloc(b, ib.MWType2)
	key := mustBind(b, w, g.binding(0, 256, ib.AccessRemoteWrite, 1))
	b.ReportAllocs()
	for b.Loop() {
		ref, f := g.tbl.AcquireRemote(key, pdA, qpA, g.r.Addr()+128, 64, ib.AccessRemoteWrite)
		if f != FaultNone {
			b.Fatal(f)
		}
		ref.Release()
	}
}

// A type 2 window's cycle: bound, then invalidated.
func BenchmarkBindInvalidate(b *testing.B) {
	g := newWindowRig(b)
	w := g.alloc(b, ib.MWType2)
	bind := g.binding(0, 256, ib.AccessRemoteWrite, 0)
	b.ReportAllocs()
	for b.Loop() {
		bind.Key = w.PostNext()
		if err := w.Bind(bind); err != nil {
			b.Fatal(err)
		}
		if err := g.tbl.Invalidate(bind.Key, pdA, 0); err != nil {
			b.Fatal(err)
		}
	}
}
