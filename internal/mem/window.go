package mem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/ib"
)

// Errors of the memory window operations. A bind or invalidation that
// fails leaves the window as it was; the engine completes its work
// request with IBV_WC_MW_BIND_ERR (doc/protocol.md §12.5).
var (
	ErrWindowType     = errors.New("not a memory window type")
	ErrWindowFreed    = errors.New("memory window deallocated")
	ErrWindowBound    = errors.New("type 2 memory window already bound")
	ErrWindowPD       = errors.New("memory window, QP and region not all in one protection domain")
	ErrWindowQP       = errors.New("type 2 memory window bound to another QP")
	ErrWindowBindable = errors.New("region registered without MW_BIND")
	ErrWindowRights   = errors.New("memory window rights the region does not allow")
	ErrWindowRange    = errors.New("memory window range not inside the region")
	ErrNotWindow      = errors.New("no bound memory window has this key")
	ErrWindowType1    = errors.New("a type 1 memory window cannot be invalidated")
)

// Window is a memory window (an MW, IBA 10.6.7): a key of its own that
// grants remote accesses, with rights of its own, to a range of a
// registered region it is bound to. While bound, the window's slot holds
// its entry, a Region over that range, so AcquireRemote checks a window's
// key as it checks a region's (doc/protocol.md §12.3). An unbound window
// has an empty slot: its key reaches nothing.
//
// The entry is rewritten by each bind, but only while it is not in the
// slot and no Ref holds it: binding unpublishes it, waits for the Refs,
// rewrites it and publishes it again. An AcquireRemote that found the
// entry before it was unpublished reads its fields only after counting
// itself and finding it in the slot again, which orders its reads after
// the bind that published it and before any later rewrite, which waits
// for its count. So binding allocates nothing, and a window can be bound
// and invalidated for every I/O.
type Window struct {
	t     *Table
	typ   ib.MWType
	pd    uint32
	index uint32
	// posted is ibv_mw.rkey: the key the binds posted so far give the
	// window. Remote accesses are checked against key, which a bind
	// changes when it executes.
	posted atomic.Uint32

	mu     sync.Mutex  // serializes Bind, Invalidate and Free; taken before Table.mu
	key    Key         // guarded by mu: the key executed binds gave the window
	parent *Region     // guarded by mu: the region it is bound to; nil while unbound
	freed  atomic.Bool // written under mu

	entry Region
}

// Binding is a bind of a window (ibv_mw_bind_info, with the BIND_MW work
// request's new key), executed by QP qp of protection domain pd.
type Binding struct {
	PD, QP uint32
	// Region is the registered region to bind to: nil, or a Length of 0,
	// unbinds a type 1 window.
	Region *Region
	Addr   uint64
	Length uint64
	Access ib.AccessFlags
	// Key is the window's new key: its variant byte is the consumer's,
	// the index stays the window's (doc/protocol.md §12.2).
	Key Key
}

// AllocWindow creates an unbound memory window of type typ in protection
// domain pd (ibv_alloc_mw).
func (t *Table) AllocWindow(pd uint32, typ ib.MWType) (*Window, error) {
	if !typ.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrWindowType, typ)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	index, ok := t.takeIndex(&t.windows)
	if !ok {
		return nil, ErrTableFull
	}
	w := &Window{t: t, typ: typ, pd: pd, index: index, key: makeKey(index, t.tags[index])}
	w.entry.win = w
	w.posted.Store(uint32(w.key))
	return w, nil
}

// Type returns the window's type.
func (w *Window) Type() ib.MWType { return w.typ }

// Freed reports whether the window was deallocated.
func (w *Window) Freed() bool { return w.freed.Load() }

// PD returns the protection domain the window was allocated in.
func (w *Window) PD() uint32 { return w.pd }

// Key returns the window's key as the binds posted so far leave it (the
// rkey field of ibv_mw). A bind that fails does not change the window,
// but leaves this key as the bind posted it, as libibverbs does.
func (w *Window) Key() Key { return Key(w.posted.Load()) }

// Post records a bind posted with key k and returns the window's key
// after it: the window's index with k's variant byte.
func (w *Window) Post(k Key) Key {
	k = makeKey(w.index, k.Tag())
	w.posted.Store(uint32(k))
	return k
}

// PostNext records a bind posted with the next variant byte after the
// window's key (ibv_inc_rkey), as ibv_bind_mw does, and returns the new
// key. Binds posted together each get a key of their own.
func (w *Window) PostNext() Key {
	for {
		old := w.posted.Load()
		k := makeKey(w.index, Key(old).Tag()+1)
		if w.posted.CompareAndSwap(old, uint32(k)) {
			return k
		}
	}
}

// Bind binds the window as b says, when the BIND_MW work request
// executes, after the checks of IBA 10.6.7 in rxe's order: the window is
// not freed; the window and the binding QP share a PD (C10-72); a type 2
// window is unbound (o10-37.2.30) and gets a non-empty range
// (o10-37.2.40); the rights are a window's; the region is registered in
// the PD, allows binding (C10-73) and, for a writable or atomic window,
// local writes (C10-74); the range lies inside the region (C10-75). A
// type 1 window is rebound without an invalidation, and a zero-length
// bind unbinds it. A failed bind changes nothing.
func (w *Window) Bind(b *Binding) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.freed.Load():
		return ErrWindowFreed
	case w.pd != b.PD:
		return ErrWindowPD
	case w.typ == ib.MWType2 && w.parent != nil:
		return ErrWindowBound
	case w.typ == ib.MWType2 && (b.Length == 0 || b.Region == nil):
		return fmt.Errorf("%w: a type 2 window needs a range", ErrWindowRange)
	}
	if err := b.Access.ValidForMW(); err != nil {
		return fmt.Errorf("%w: %w", ErrWindowRights, err)
	}
	key := makeKey(w.index, b.Key.Tag())
	if b.Length == 0 || b.Region == nil {
		w.unbind()
		w.key = key
		return nil
	}
	r := b.Region
	w.t.mu.Lock()
	err := w.t.checkBind(r, b)
	if err == nil {
		r.windows++ // before the old binding goes, so r cannot be deregistered meanwhile
	}
	w.t.mu.Unlock()
	if err != nil {
		return err
	}
	w.unbind()
	off := b.Addr - r.addr
	e := &w.entry
	e.key, e.pd, e.qp, e.access = key, w.pd, anyQP, b.Access&ib.AccessRemote
	if w.typ == ib.MWType2 {
		e.qp = b.QP // type 2B: reached only through the QP that bound it
	}
	e.addr, e.buf = b.Addr, r.buf[off:off+b.Length:off+b.Length]
	w.key, w.parent = key, r
	w.t.slots[w.index].Store(e)
	return nil
}

// checkBind checks the region of a bind (C10-73 to C10-75). t.mu must be
// held.
func (t *Table) checkBind(r *Region, b *Binding) error {
	switch {
	case r.win != nil || int(r.key.Index()) >= len(t.slots) || t.slots[r.key.Index()].Load() != r:
		return ErrNotRegistered
	case r.pd != b.PD:
		return ErrWindowPD
	case r.access&ib.AccessMWBind == 0:
		return ErrWindowBindable
	case b.Access&(ib.AccessRemoteWrite|ib.AccessRemoteAtomic) != 0 && r.access&ib.AccessLocalWrite == 0:
		return ErrWindowRights
	}
	if _, ok := r.offset(b.Addr, b.Length); !ok {
		return ErrWindowRange
	}
	return nil
}

// unbind takes the window's entry out of its slot, waits for the accesses
// through it to end, and releases the region it was bound to. w.mu must
// be held.
func (w *Window) unbind() {
	if w.parent == nil {
		return
	}
	w.t.slots[w.index].Store(nil)
	w.entry.drain()
	w.t.mu.Lock()
	w.parent.windows--
	w.t.mu.Unlock()
	w.parent = nil
}

// Invalidate invalidates the bound type 2 window whose key is key (LOCAL
// INVALIDATE, or the IETH of a SEND WITH INVALIDATE), for a QP of
// protection domain pd: qp is the QP a remote invalidation came on, which
// must be the one the window is bound to, or 0 for a local invalidation.
// When it returns, the key reaches nothing and no access through it is in
// progress; the window may be bound again. Registered regions cannot be
// invalidated: ibv_reg_mr's regions are not of the kind the memory
// management extensions invalidate (rxe refuses them too).
func (t *Table) Invalidate(key Key, pd, qp uint32) error {
	index := key.Index()
	if index >= uint32(len(t.slots)) {
		return ErrNotWindow
	}
	r := t.slots[index].Load()
	if r == nil || r.win == nil {
		return ErrNotWindow
	}
	w := r.win
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.parent == nil || w.key != key:
		return ErrNotWindow
	case w.typ == ib.MWType1:
		return ErrWindowType1 // o10-37.2.26
	case w.pd != pd:
		return ErrWindowPD
	case qp != 0 && w.entry.qp != qp:
		return ErrWindowQP
	}
	w.unbind()
	return nil
}

// Free deallocates the window (ibv_dealloc_mw), unbinding it first: when
// it returns no access through it is in progress. Its binds still queued
// fail. Freeing it twice returns ErrWindowFreed.
func (w *Window) Free() error {
	w.mu.Lock()
	if w.freed.Load() {
		w.mu.Unlock()
		return ErrWindowFreed
	}
	w.unbind()
	w.freed.Store(true)
	w.mu.Unlock()
	w.t.mu.Lock()
	w.t.windows.free = append(w.t.windows.free, w.index)
	w.t.mu.Unlock()
	return nil
}
