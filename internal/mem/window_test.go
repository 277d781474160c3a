package mem

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
)

const (
	qpA      = 0x11
	qpB      = 0x12
	bindable = all | ib.AccessMWBind
)

// windowRig is a table with a 256-byte region of pdA that windows may be
// bound to.
type windowRig struct {
	tbl *Table
	buf []byte
	r   *Region
}

func newWindowRig(t testing.TB) *windowRig {
	tbl := NewTable(4, 4)
	buf := make([]byte, 256)
	for i := range buf {
		buf[i] = byte(i)
	}
	return &windowRig{tbl: tbl, buf: buf, r: mustRegister(t, tbl, pdA, buf, bindable)}
}

func (g *windowRig) alloc(t testing.TB, typ ib.MWType) *Window {
	t.Helper()
	w, err := g.tbl.AllocWindow(pdA, typ)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// binding binds [off, off+n) of the rig's region from QP qpA with rights
// access and the given variant byte.
func (g *windowRig) binding(off, n uint64, access ib.AccessFlags, tag uint8) *Binding {
	return &Binding{PD: pdA, QP: qpA, Region: g.r, Addr: g.r.Addr() + off, Length: n, Access: access, Key: Key(tag)}
}

func mustBind(t testing.TB, w *Window, b *Binding) Key {
	t.Helper()
	if err := w.Bind(b); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return makeKey(w.index, b.Key.Tag())
}

func TestAllocWindow(t *testing.T) {
	tbl := NewTable(1, 2)
	for _, typ := range []ib.MWType{0, 3} {
		if w, err := tbl.AllocWindow(pdA, typ); !errors.Is(err, ErrWindowType) {
			t.Errorf("AllocWindow(type %d) = %v, %v; want ErrWindowType", typ, w, err)
		}
	}
	a, err := tbl.AllocWindow(pdA, ib.MWType1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tbl.AllocWindow(pdB, ib.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	// Windows take the indices after the regions', and do not count
	// against them.
	if a.Key().Index() != 2 || b.Key().Index() != 3 || a.Type() != ib.MWType1 || b.Type() != ib.MWType2 || b.PD() != pdB {
		t.Errorf("windows: key %#x type %v, key %#x type %v pd %d", uint32(a.Key()), a.Type(), uint32(b.Key()), b.Type(), b.PD())
	}
	if w, err := tbl.AllocWindow(pdA, ib.MWType2); !errors.Is(err, ErrTableFull) {
		t.Errorf("third window in a table of 2 = %v, %v; want ErrTableFull", w, err)
	}
	mustRegister(t, tbl, pdA, make([]byte, 8), 0)
	if r, err := tbl.Register(pdA, make([]byte, 8), 0); !errors.Is(err, ErrTableFull) {
		t.Errorf("second region in a table of 1 = %v, %v; want ErrTableFull", r, err)
	}
	// An unbound window's key reaches nothing.
	for _, w := range []*Window{a, b} {
		if _, f := tbl.AcquireRemote(w.Key(), w.PD(), qpA, 0, 0, 0); f != FaultBadKey {
			t.Errorf("unbound %v window: %v, want bad key", w.Type(), f)
		}
	}
	// A freed index comes back with another variant byte.
	old := b.Key()
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); !errors.Is(err, ErrWindowFreed) {
		t.Errorf("second Free = %v, want ErrWindowFreed", err)
	}
	c, err := tbl.AllocWindow(pdA, ib.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Key().Index() != old.Index() || c.Key() == old {
		t.Errorf("reused window key %#x, old %#x", uint32(c.Key()), uint32(old))
	}
}

// A bound type 2 window reaches exactly its range of the region, with its
// own rights, through the QP that bound it, and only remotely.
func TestWindowAccess(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	k := mustBind(t, w, g.binding(64, 32, ib.AccessRemoteRead|ib.AccessRemoteWrite, 0x5a))
	a := g.r.Addr() + 64
	for _, tc := range []struct {
		name    string
		key     Key
		pd, qp  uint32
		va, n   uint64
		need    ib.AccessFlags
		want    Fault
		wantOff int // into the region, for FaultNone
	}{
		{"whole window", k, pdA, qpA, a, 32, ib.AccessRemoteWrite, FaultNone, 64},
		{"inside", k, pdA, qpA, a + 8, 4, ib.AccessRemoteRead, FaultNone, 72},
		{"empty at the end", k, pdA, qpA, a + 32, 0, ib.AccessRemoteRead, FaultNone, 96},
		{"allocation key", makeKey(w.index, w.key.Tag()^1), pdA, qpA, a, 1, 0, FaultBadKey, 0},
		{"other PD", k, pdB, qpA, a, 1, 0, FaultPD, 0},
		{"other QP", k, pdA, qpB, a, 1, 0, FaultQP, 0},
		{"as an L_Key", k, pdA, 0, a, 1, 0, FaultQP, 0},
		{"right the window lacks", k, pdA, qpA, a, 8, ib.AccessRemoteAtomic, FaultAccess, 0},
		{"region byte before", k, pdA, qpA, a - 1, 1, ib.AccessRemoteRead, FaultBounds, 0},
		{"region byte after", k, pdA, qpA, a + 32, 1, ib.AccessRemoteRead, FaultBounds, 0},
		{"straddles the end", k, pdA, qpA, a + 30, 4, ib.AccessRemoteRead, FaultBounds, 0},
	} {
		ref, f := g.tbl.AcquireRemote(tc.key, tc.pd, tc.qp, tc.va, tc.n, tc.need)
		if f != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, f, tc.want)
		}
		if f != FaultNone {
			continue
		}
		b := ref.Bytes()
		if len(b) != int(tc.n) || cap(b) != len(b) || (tc.n > 0 && AddrOf(b) != AddrOf(g.buf[tc.wantOff:])) {
			t.Errorf("%s: bytes at %#x len %d cap %d, want %#x len %d", tc.name, AddrOf(b), len(b), cap(b), AddrOf(g.buf[tc.wantOff:]), tc.n)
		}
		ref.Release()
	}
	// The region's own key is unaffected, and a local Acquire of the
	// window key fails.
	if ref, f := g.tbl.Acquire(g.r.Key(), pdA, g.r.Addr(), 256, ib.AccessLocalWrite); f != FaultNone {
		t.Errorf("region key: %v", f)
	} else {
		ref.Release()
	}
	if _, f := g.tbl.Acquire(k, pdA, a, 1, 0); f != FaultQP {
		t.Errorf("window key as an L_Key: %v, want QP mismatch", f)
	}
	if w.entry.refs.Load() != 0 {
		t.Errorf("window refs %d after release", w.entry.refs.Load())
	}
}

func TestWindowBindErrors(t *testing.T) {
	g := newWindowRig(t)
	noBind := mustRegister(t, g.tbl, pdA, make([]byte, 64), all)
	readOnly := mustRegister(t, g.tbl, pdA, make([]byte, 64), ib.AccessRemoteRead|ib.AccessMWBind)
	otherPD := mustRegister(t, g.tbl, pdB, make([]byte, 64), bindable)
	gone := &Region{key: noBind.key ^ 1}
	rr, rw := ib.AccessRemoteRead, ib.AccessRemoteWrite
	for _, tc := range []struct {
		name  string
		typ   ib.MWType
		b     func(b *Binding)
		want  error
		also  error
		setup func(w *Window)
	}{
		{"QP of another PD", ib.MWType2, func(b *Binding) { b.PD = pdB }, ErrWindowPD, nil, nil},
		{"zero length, type 2", ib.MWType2, func(b *Binding) { b.Length = 0 }, ErrWindowRange, nil, nil},
		{"no region, type 2", ib.MWType2, func(b *Binding) { b.Region = nil }, ErrWindowRange, nil, nil},
		{"zero based", ib.MWType2, func(b *Binding) { b.Access |= ib.AccessZeroBased }, ErrWindowRights, ib.ErrInvalidAccessFlags, nil},
		{"MW_BIND right", ib.MWType1, func(b *Binding) { b.Access = ib.AccessMWBind }, ErrWindowRights, ib.ErrInvalidAccessFlags, nil},
		{"region without MW_BIND", ib.MWType2, func(b *Binding) { b.Region, b.Addr = noBind, noBind.Addr() }, ErrWindowBindable, nil, nil},
		{"region of another PD", ib.MWType2, func(b *Binding) { b.Region, b.Addr = otherPD, otherPD.Addr() }, ErrWindowPD, nil, nil},
		{"deregistered region", ib.MWType2, func(b *Binding) { b.Region = gone }, ErrNotRegistered, nil, nil},
		{"writable window, region without LOCAL_WRITE", ib.MWType2, func(b *Binding) { b.Region, b.Addr, b.Access = readOnly, readOnly.Addr(), rw }, ErrWindowRights, nil, nil},
		{"atomic window, region without LOCAL_WRITE", ib.MWType1, func(b *Binding) {
			b.Region, b.Addr, b.Access = readOnly, readOnly.Addr(), ib.AccessRemoteAtomic
		}, ErrWindowRights, nil, nil},
		{"starts before the region", ib.MWType2, func(b *Binding) { b.Addr = g.r.Addr() - 1 }, ErrWindowRange, nil, nil},
		{"ends after the region", ib.MWType2, func(b *Binding) { b.Addr, b.Length = g.r.Addr()+200, 57 }, ErrWindowRange, nil, nil},
		{"length wraps", ib.MWType1, func(b *Binding) { b.Length = ^uint64(0) }, ErrWindowRange, nil, nil},
		{"type 2 already bound", ib.MWType2, nil, ErrWindowBound, nil, func(w *Window) { mustBind(t, w, g.binding(0, 8, rr, 1)) }},
		{"freed", ib.MWType1, nil, ErrWindowFreed, nil, func(w *Window) { w.Free() }},
	} {
		w := g.alloc(t, tc.typ)
		if tc.setup != nil {
			tc.setup(w)
		}
		before, beforeKey := w.parent, w.key
		b := g.binding(16, 32, rr, 0x77)
		if tc.b != nil {
			tc.b(b)
		}
		err := w.Bind(b)
		if !errors.Is(err, tc.want) || (tc.also != nil && !errors.Is(err, tc.also)) {
			t.Errorf("%s: Bind = %v, want %v", tc.name, err, tc.want)
		}
		if w.parent != before || w.key != beforeKey {
			t.Errorf("%s: a failed bind changed the window", tc.name)
		}
		w.Free()
	}
	for _, r := range []*Region{g.r, noBind, readOnly, otherPD} {
		if r.windows != 0 {
			t.Errorf("region %#x counts %d windows after failed binds", uint32(r.key), r.windows)
		}
	}
}

// Invalidation ends a type 2 window's key; a rebind gives it a new one, and
// the old key stays dead.
func TestWindowInvalidate(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	t1 := g.alloc(t, ib.MWType1)
	k1 := mustBind(t, w, g.binding(0, 16, ib.AccessRemoteRead, 0x10))
	kt1 := mustBind(t, t1, g.binding(0, 16, ib.AccessRemoteRead, 0x20))
	for _, tc := range []struct {
		name   string
		key    Key
		pd, qp uint32
		want   error
	}{
		{"region key", g.r.Key(), pdA, 0, ErrNotWindow},
		{"key 0", 0, pdA, 0, ErrNotWindow},
		{"index past the table", makeKey(99, 1), pdA, 0, ErrNotWindow},
		{"wrong variant", k1 ^ 1, pdA, 0, ErrNotWindow},
		{"type 1", kt1, pdA, 0, ErrWindowType1},
		{"other PD", k1, pdB, 0, ErrWindowPD},
		{"remotely, through another QP", k1, pdA, qpB, ErrWindowQP},
	} {
		if err := g.tbl.Invalidate(tc.key, tc.pd, tc.qp); !errors.Is(err, tc.want) {
			t.Errorf("%s: Invalidate = %v, want %v", tc.name, err, tc.want)
		}
	}
	if g.r.windows != 2 {
		t.Fatalf("region counts %d windows, want 2", g.r.windows)
	}
	if err := g.tbl.Invalidate(k1, pdA, qpA); err != nil {
		t.Fatalf("remote invalidation through the binding QP: %v", err)
	}
	if _, f := g.tbl.AcquireRemote(k1, pdA, qpA, g.r.Addr(), 1, ib.AccessRemoteRead); f != FaultBadKey {
		t.Errorf("invalidated key: %v, want bad key", f)
	}
	if err := g.tbl.Invalidate(k1, pdA, 0); !errors.Is(err, ErrNotWindow) {
		t.Errorf("second invalidation = %v, want ErrNotWindow", err)
	}
	// Rebound with a new key, through another QP: the old key stays dead,
	// the new one works through the new QP only.
	b := g.binding(100, 8, ib.AccessRemoteWrite, 0x11)
	b.QP = qpB
	k2 := mustBind(t, w, b)
	if _, f := g.tbl.AcquireRemote(k1, pdA, qpA, g.r.Addr(), 1, ib.AccessRemoteRead); f != FaultBadKey {
		t.Errorf("key of the first binding after a rebind: %v, want bad key", f)
	}
	if ref, f := g.tbl.AcquireRemote(k2, pdA, qpB, g.r.Addr()+100, 8, ib.AccessRemoteWrite); f != FaultNone {
		t.Errorf("new key: %v", f)
	} else {
		ref.Release()
	}
	if _, f := g.tbl.AcquireRemote(k2, pdA, qpA, g.r.Addr()+100, 8, ib.AccessRemoteWrite); f != FaultQP {
		t.Errorf("new key through the first QP: %v, want QP mismatch", f)
	}
	// Local invalidation: any QP of the PD.
	if err := g.tbl.Invalidate(k2, pdA, 0); err != nil {
		t.Errorf("local invalidation: %v", err)
	}
	if g.r.windows != 1 {
		t.Errorf("region counts %d windows, want 1 (the type 1)", g.r.windows)
	}
}

// A type 1 window is rebound without invalidation, reachable through any
// QP of its PD, and unbound by a zero-length bind.
func TestWindowType1(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType1)
	k1 := mustBind(t, w, g.binding(0, 16, ib.AccessRemoteRead, w.PostNext().Tag()))
	for _, qp := range []uint32{qpA, qpB} {
		if ref, f := g.tbl.AcquireRemote(k1, pdA, qp, g.r.Addr(), 16, ib.AccessRemoteRead); f != FaultNone {
			t.Errorf("through QP %#x: %v", qp, f)
		} else {
			ref.Release()
		}
	}
	if _, f := g.tbl.Acquire(k1, pdA, g.r.Addr(), 1, 0); f != FaultQP {
		t.Errorf("as an L_Key: %v, want QP mismatch", f)
	}
	k2 := mustBind(t, w, g.binding(32, 16, ib.AccessRemoteWrite, w.PostNext().Tag()))
	if k2 == k1 {
		t.Fatalf("rebind kept key %#x", uint32(k1))
	}
	if _, f := g.tbl.AcquireRemote(k1, pdA, qpA, g.r.Addr(), 1, ib.AccessRemoteRead); f != FaultBadKey {
		t.Errorf("key of the first binding: %v, want bad key", f)
	}
	if g.r.windows != 1 {
		t.Errorf("region counts %d windows after a rebind, want 1", g.r.windows)
	}
	// Zero length: unbound, with a new key, and the region free to go.
	z := &Binding{PD: pdA, QP: qpA, Key: Key(w.PostNext().Tag())}
	k3 := mustBind(t, w, z)
	if _, f := g.tbl.AcquireRemote(k2, pdA, qpA, g.r.Addr()+32, 1, ib.AccessRemoteWrite); f != FaultBadKey {
		t.Errorf("key of the second binding after unbinding: %v, want bad key", f)
	}
	if _, f := g.tbl.AcquireRemote(k3, pdA, qpA, g.r.Addr()+32, 0, 0); f != FaultBadKey {
		t.Errorf("key of the zero-length binding: %v, want bad key", f)
	}
	if w.Key() != k3 || w.key != k3 {
		t.Errorf("key %#x (executed %#x), want %#x", uint32(w.Key()), uint32(w.key), uint32(k3))
	}
	if err := g.tbl.Deregister(g.r); err != nil {
		t.Errorf("Deregister after the window was unbound: %v", err)
	}
}

func TestWindowKeys(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	k0 := w.Key()
	// Post keeps the window's index whatever the consumer's upper bits.
	if k := w.Post(makeKey(0xabc, 0x42)); k != makeKey(k0.Index(), 0x42) || w.Key() != k {
		t.Errorf("Post = %#x, Key %#x", uint32(k), uint32(w.Key()))
	}
	// PostNext steps the variant byte, wrapping, index kept.
	w.Post(makeKey(0, 0xff))
	if k := w.PostNext(); k != makeKey(k0.Index(), 0) {
		t.Errorf("PostNext after 0xff = %#x", uint32(k))
	}
	// Binding takes the variant byte of the binding's key only.
	b := g.binding(0, 8, ib.AccessRemoteRead, 0)
	b.Key = makeKey(0x123, 0x9c)
	if k := mustBind(t, w, b); w.key != k || k != makeKey(k0.Index(), 0x9c) {
		t.Errorf("bound key %#x", uint32(w.key))
	}
}

func TestDeregisterWithWindows(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	k := mustBind(t, w, g.binding(0, 8, ib.AccessRemoteRead, 3))
	if err := g.tbl.Deregister(g.r); !errors.Is(err, ErrWindowsBound) {
		t.Fatalf("Deregister with a window bound = %v, want ErrWindowsBound", err)
	}
	if ref, f := g.tbl.Acquire(g.r.Key(), pdA, g.r.Addr(), 1, 0); f != FaultNone {
		t.Fatalf("region key after the refused Deregister: %v", f)
	} else {
		ref.Release()
	}
	if err := g.tbl.Deregister(&w.entry); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("Deregister of a window's entry = %v", err)
	}
	if err := g.tbl.Invalidate(k, pdA, 0); err != nil {
		t.Fatal(err)
	}
	if err := g.tbl.Deregister(g.r); err != nil {
		t.Errorf("Deregister after invalidation: %v", err)
	}
	// Freeing a bound window unbinds it, too.
	g = newWindowRig(t)
	w = g.alloc(t, ib.MWType1)
	mustBind(t, w, g.binding(0, 8, ib.AccessRemoteRead, 3))
	if err := w.Free(); err != nil {
		t.Fatal(err)
	}
	if err := g.tbl.Deregister(g.r); err != nil {
		t.Errorf("Deregister after the window was freed: %v", err)
	}
	if err := w.Bind(g.binding(0, 8, ib.AccessRemoteRead, 4)); !errors.Is(err, ErrWindowFreed) {
		t.Errorf("Bind after Free = %v", err)
	}
}

// Invalidation, like Deregister, refuses new accesses at once and returns
// only when the access in progress has released its Ref.
func TestInvalidateWaitsForRef(t *testing.T) {
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	k := mustBind(t, w, g.binding(0, 64, ib.AccessRemoteWrite, 9))
	ref, f := g.tbl.AcquireRemote(k, pdA, qpA, g.r.Addr(), 64, ib.AccessRemoteWrite)
	if f != FaultNone {
		t.Fatal(f)
	}
	done := make(chan error)
	go func() { done <- g.tbl.Invalidate(k, pdA, 0) }()
	waitKeyDies(t, "Invalidate", func() (Ref, Fault) {
		return g.tbl.AcquireRemote(k, pdA, qpA, g.r.Addr(), 1, ib.AccessRemoteWrite)
	})
	select {
	case err := <-done:
		t.Fatalf("Invalidate returned (%v) while a Ref was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	copy(ref.Bytes(), "still mine")
	ref.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if string(g.buf[:10]) != "still mine" {
		t.Errorf("region holds %q", g.buf[:10])
	}
}

// Readers race with a goroutine that binds and invalidates a window over
// and over, each time over another range with another key. A reader with
// a key reaches, while it holds its Ref, only the range that key was bound
// to; run under -race, this also checks that rewriting the window's entry
// is ordered with every access that reads it.
func TestConcurrentAcquireBind(t *testing.T) {
	const (
		readers = 3
		rounds  = 200 // below 256: a variant byte is never reused
	)
	g := newWindowRig(t)
	w := g.alloc(t, ib.MWType2)
	// issued: key<<32 | offset<<8 | length of the current binding.
	var issued atomic.Uint64
	var stop atomic.Bool
	var hits atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				v := issued.Load()
				key, off, n := Key(v>>32), (v>>8)&0xff, v&0xff
				ref, f := g.tbl.AcquireRemote(key, pdA, qpA, g.r.Addr()+off, n, ib.AccessRemoteRead)
				if f != FaultNone {
					continue
				}
				b := ref.Bytes()
				if AddrOf(b) != g.r.Addr()+off || uint64(len(b)) != n {
					t.Errorf("key %#x reached %d bytes at offset %d, bound to %d at %d",
						uint32(key), len(b), AddrOf(b)-g.r.Addr(), n, off)
				}
				for i := range b {
					if b[i] != byte(off)+byte(i) {
						t.Errorf("key %#x: byte %d is %d", uint32(key), i, b[i])
						break
					}
				}
				hits.Add(1)
				ref.Release()
				// More busy readers than CPUs: yield outside a Ref, or
				// the binder waits a whole time slice for a CPU.
				runtime.Gosched()
			}
		}()
	}
	for i := range rounds {
		off, n := uint64(i*37%200), uint64(1+i%56)
		k := mustBind(t, w, g.binding(off, n, ib.AccessRemoteRead, uint8(i)))
		issued.Store(uint64(k)<<32 | off<<8 | n)
		// Until the readers used this binding a few times (a bounded wait:
		// the final check says if they never can).
		for h, spin := hits.Load(), 0; hits.Load() < h+readers && spin < 1e5; spin++ {
			runtime.Gosched()
		}
		if err := g.tbl.Invalidate(k, pdA, qpA); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if hits.Load() == 0 {
		t.Error("no access ever succeeded")
	}
	t.Logf("%d accesses through %d bindings", hits.Load(), rounds)
}
