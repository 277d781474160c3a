package mem

import (
	"errors"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

const (
	pdA = 1
	pdB = 2
	all = ib.AccessLocalWrite | ib.AccessRemoteWrite | ib.AccessRemoteRead | ib.AccessRemoteAtomic
)

func mustRegister(t testing.TB, tbl *Table, pd uint32, buf []byte, access ib.AccessFlags) *Region {
	t.Helper()
	r, err := tbl.Register(pd, buf, access)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	return r
}

func TestKeyFields(t *testing.T) {
	k := makeKey(0xabcdef, 0x42)
	if k != 0xabcdef42 || k.Index() != 0xabcdef || k.Tag() != 0x42 {
		t.Errorf("makeKey = %#x, Index %#x, Tag %#x", uint32(k), k.Index(), k.Tag())
	}
}

func TestNewTableRange(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {-1, 0}, {MaxIndex + 1, 0}, {1, -1}, {MaxIndex, 1}, {1, MaxIndex}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewTable(%d, %d) did not panic", c[0], c[1])
				}
			}()
			NewTable(c[0], c[1])
		}()
	}
	if tbl := NewTable(1, 0); len(tbl.slots) != 2 {
		t.Errorf("NewTable(1, 0) has %d slots", len(tbl.slots))
	}
	if tbl := NewTable(2, 3); len(tbl.slots) != 6 {
		t.Errorf("NewTable(2, 3) has %d slots", len(tbl.slots))
	}
}

func TestRegister(t *testing.T) {
	tbl := NewTable(4, 0)
	buf := make([]byte, 100)
	r := mustRegister(t, tbl, pdA, buf, ib.AccessRemoteRead)
	if r.Key().Index() != 1 || r.Addr() != AddrOf(buf) || r.Len() != 100 || r.PD() != pdA || r.Access() != ib.AccessRemoteRead {
		t.Errorf("region: key %#x addr %#x len %d pd %d access %v",
			uint32(r.Key()), r.Addr(), r.Len(), r.PD(), r.Access())
	}
}

func TestRegisterErrors(t *testing.T) {
	tbl := NewTable(2, 0)
	for _, tc := range []struct {
		name   string
		buf    []byte
		access ib.AccessFlags
		want   error
	}{
		{"nil", nil, all, ErrEmptyBuffer},
		{"empty", make([]byte, 0, 8), all, ErrEmptyBuffer},
		{"remote write without local write", make([]byte, 8), ib.AccessRemoteWrite, ib.ErrInvalidAccessFlags},
		{"remote atomic without local write", make([]byte, 8), ib.AccessRemoteAtomic | ib.AccessRemoteRead, ib.ErrInvalidAccessFlags},
		{"zero based", make([]byte, 8), ib.AccessLocalWrite | ib.AccessZeroBased, ib.ErrInvalidAccessFlags},
	} {
		if r, err := tbl.Register(pdA, tc.buf, tc.access); !errors.Is(err, tc.want) {
			t.Errorf("%s: Register = %v, %v; want %v", tc.name, r, err, tc.want)
		}
	}
	mustRegister(t, tbl, pdA, make([]byte, 1), 0)
	mustRegister(t, tbl, pdA, make([]byte, 1), ib.AccessRemoteRead)
	if r, err := tbl.Register(pdA, make([]byte, 1), 0); !errors.Is(err, ErrTableFull) {
		t.Errorf("third Register in a table of 2 = %v, %v; want ErrTableFull", r, err)
	}
}

func TestDeregisterErrors(t *testing.T) {
	tbl, other := NewTable(2, 0), NewTable(2, 0)
	r := mustRegister(t, tbl, pdA, make([]byte, 8), 0)
	foreign := mustRegister(t, other, pdA, make([]byte, 8), 0)
	if err := tbl.Deregister(nil); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("Deregister(nil) = %v", err)
	}
	if err := tbl.Deregister(foreign); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("Deregister of another table's region = %v", err)
	}
	if err := tbl.Deregister(r); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Deregister(r); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("double Deregister = %v", err)
	}
	// Still an error once the slot holds a newer region.
	mustRegister(t, tbl, pdA, make([]byte, 8), 0)
	mustRegister(t, tbl, pdA, make([]byte, 8), 0)
	if err := tbl.Deregister(r); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("Deregister after the slot was reused = %v", err)
	}
}

// A key kept after Deregister must not reach the next region in its slot.
func TestKeyTagChangesOnReuse(t *testing.T) {
	tbl := NewTable(1, 0)
	buf := make([]byte, 64)
	r := mustRegister(t, tbl, pdA, buf, ib.AccessRemoteRead)
	seen := map[Key]bool{r.Key(): true}
	for range 255 {
		old := r.Key()
		if err := tbl.Deregister(r); err != nil {
			t.Fatal(err)
		}
		r = mustRegister(t, tbl, pdA, buf, ib.AccessRemoteRead)
		if r.Key().Index() != old.Index() {
			t.Fatalf("index %d reused as %d", old.Index(), r.Key().Index())
		}
		if seen[r.Key()] {
			t.Fatalf("key %#x repeated within 256 reuses", uint32(r.Key()))
		}
		seen[r.Key()] = true
		if _, f := tbl.Acquire(old, pdA, r.Addr(), 1, ib.AccessRemoteRead); f != FaultBadKey {
			t.Fatalf("stale key %#x: %v, want bad key", uint32(old), f)
		}
		ref, f := tbl.Acquire(r.Key(), pdA, r.Addr(), 1, ib.AccessRemoteRead)
		if f != FaultNone {
			t.Fatalf("new key %#x: %v", uint32(r.Key()), f)
		}
		ref.Release()
	}
}

// Never-used slots are taken before released ones, and released ones
// oldest first, so that each slot is reused as rarely as possible.
func TestIndexReuseOrder(t *testing.T) {
	tbl := NewTable(3, 0)
	a := mustRegister(t, tbl, pdA, make([]byte, 1), 0)
	if err := tbl.Deregister(a); err != nil {
		t.Fatal(err)
	}
	b := mustRegister(t, tbl, pdA, make([]byte, 1), 0)
	c := mustRegister(t, tbl, pdA, make([]byte, 1), 0)
	if b.Key().Index() != 2 || c.Key().Index() != 3 {
		t.Fatalf("indices %d, %d; want fresh 2, 3", b.Key().Index(), c.Key().Index())
	}
	tbl.Deregister(c)
	tbl.Deregister(b)
	for _, want := range []uint32{1, 3, 2} {
		r := mustRegister(t, tbl, pdA, make([]byte, 1), 0)
		if r.Key().Index() != want {
			t.Errorf("reused index %d, want %d", r.Key().Index(), want)
		}
	}
}

func TestAcquireFaults(t *testing.T) {
	tbl := NewTable(8, 0)
	buf := make([]byte, 256)
	r := mustRegister(t, tbl, pdA, buf, ib.AccessLocalWrite|ib.AccessRemoteRead)
	gone := mustRegister(t, tbl, pdA, buf, all)
	if err := tbl.Deregister(gone); err != nil {
		t.Fatal(err)
	}
	a, n := r.Addr(), uint64(r.Len())
	k := r.Key()
	const max = ^uint64(0)
	for _, tc := range []struct {
		name      string
		key       Key
		pd        uint32
		va, len   uint64
		need      ib.AccessFlags
		want      Fault
		wantBytes []byte
	}{
		{"whole region", k, pdA, a, n, ib.AccessRemoteRead, FaultNone, buf},
		{"local read needs nothing", k, pdA, a + 10, 20, 0, FaultNone, buf[10:30]},
		{"local write", k, pdA, a, n, ib.AccessLocalWrite, FaultNone, buf},
		{"last byte", k, pdA, a + n - 1, 1, ib.AccessRemoteRead, FaultNone, buf[n-1:]},
		{"empty at start", k, pdA, a, 0, ib.AccessRemoteRead, FaultNone, buf[:0]},
		{"empty at end", k, pdA, a + n, 0, ib.AccessRemoteRead, FaultNone, buf[n:]},

		{"key 0", 0, pdA, a, 1, 0, FaultBadKey, nil},
		{"index past table", makeKey(9, k.Tag()), pdA, a, 1, 0, FaultBadKey, nil},
		{"largest key", ^Key(0), pdA, a, 1, 0, FaultBadKey, nil},
		{"empty slot", makeKey(3, k.Tag()), pdA, a, 1, 0, FaultBadKey, nil},
		{"tag mismatch", k ^ 1, pdA, a, 1, 0, FaultBadKey, nil},
		{"deregistered", gone.Key(), pdA, gone.Addr(), 1, 0, FaultBadKey, nil},
		{"bad key beats PD", k ^ 1, pdB, a, 1, 0, FaultBadKey, nil},

		{"PD mismatch", k, pdB, a, 1, 0, FaultPD, nil},
		{"PD beats access and bounds", k, pdB, 0, max, ib.AccessRemoteAtomic, FaultPD, nil},

		{"no remote write", k, pdA, a, 1, ib.AccessRemoteWrite, FaultAccess, nil},
		{"no remote atomic", k, pdA, a, 8, ib.AccessRemoteAtomic, FaultAccess, nil},
		{"one of two rights missing", k, pdA, a, 1, ib.AccessRemoteRead | ib.AccessRemoteWrite, FaultAccess, nil},
		{"access beats bounds", k, pdA, 0, max, ib.AccessRemoteWrite, FaultAccess, nil},

		{"one past the end", k, pdA, a + n, 1, 0, FaultBounds, nil},
		{"empty past the end", k, pdA, a + n + 1, 0, 0, FaultBounds, nil},
		{"too long", k, pdA, a, n + 1, 0, FaultBounds, nil},
		{"straddles the end", k, pdA, a + n - 4, 8, 0, FaultBounds, nil},
		{"below start", k, pdA, a - 1, 1, 0, FaultBounds, nil},
		{"straddles the start", k, pdA, a - 1, 2, 0, FaultBounds, nil},
		{"empty below start", k, pdA, a - 1, 0, 0, FaultBounds, nil},
		{"va 0", k, pdA, 0, 1, 0, FaultBounds, nil},
		{"va+len wraps to start", k, pdA, a + 8, max - 7, 0, FaultBounds, nil},
		{"va+len wraps inside", k, pdA, a + 1, max, 0, FaultBounds, nil},
		{"va near 2^64", k, pdA, max, 2, 0, FaultBounds, nil},
		{"va max, length 0", k, pdA, max, 0, 0, FaultBounds, nil},
		{"length max", k, pdA, a, max, 0, FaultBounds, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, f := tbl.Acquire(tc.key, tc.pd, tc.va, tc.len, tc.need)
			if f != tc.want {
				t.Fatalf("fault %v, want %v", f, tc.want)
			}
			if f != FaultNone {
				if ref.r != nil || ref.b != nil {
					t.Errorf("failed Acquire returned a non-zero Ref")
				}
				return
			}
			got := ref.Bytes()
			if got == nil || len(got) != len(tc.wantBytes) || cap(got) != len(got) ||
				AddrOf(got) != AddrOf(tc.wantBytes) {
				t.Errorf("Bytes at %#x len %d cap %d; want %#x len %d cap %d",
					AddrOf(got), len(got), cap(got), AddrOf(tc.wantBytes), len(tc.wantBytes), len(tc.wantBytes))
			}
			if r.refs.Load() != 1 {
				t.Errorf("refs %d while held", r.refs.Load())
			}
			ref.Release()
			if r.refs.Load() != 0 {
				t.Errorf("refs %d after Release", r.refs.Load())
			}
		})
	}
}

func TestRefBytesAreTheRegion(t *testing.T) {
	tbl := NewTable(1, 0)
	buf := make([]byte, 32)
	r := mustRegister(t, tbl, pdA, buf, ib.AccessLocalWrite|ib.AccessRemoteWrite)
	ref, f := tbl.Acquire(r.Key(), pdA, r.Addr()+4, 3, ib.AccessRemoteWrite)
	if f != FaultNone {
		t.Fatal(f)
	}
	copy(ref.Bytes(), "abc")
	ref.Release()
	if string(buf[3:8]) != "\x00abc\x00" {
		t.Errorf("region holds %q", buf[3:8])
	}
}

func TestRefRelease(t *testing.T) {
	tbl := NewTable(1, 0)
	r := mustRegister(t, tbl, pdA, make([]byte, 8), 0)
	ref, _ := tbl.Acquire(r.Key(), pdA, r.Addr(), 8, 0)
	cp := ref
	ref.Release()
	if ref.Bytes() != nil {
		t.Error("Bytes not nil after Release")
	}
	ref.Release() // the same variable again: a no-op
	if r.refs.Load() != 0 {
		t.Fatalf("refs %d", r.refs.Load())
	}
	var zero Ref
	zero.Release()
	defer func() {
		if recover() == nil {
			t.Error("releasing a copy of a released Ref did not panic")
		}
	}()
	cp.Release()
}

func TestFaultString(t *testing.T) {
	for f, want := range map[Fault]string{
		FaultNone: "none", FaultBadKey: "bad key", FaultPD: "PD mismatch", FaultQP: "QP mismatch",
		FaultAccess: "access denied", FaultBounds: "out of bounds", 200: "Fault(200)",
	} {
		if f.String() != want {
			t.Errorf("%d.String() = %q, want %q", uint8(f), f.String(), want)
		}
	}
}

// TestKeyTagRandom: the variant byte of a key is not a function of the
// registration order: the first region of fresh tables, and the region
// after a reuse, get tags that differ from table to table
// (doc/protocol.md §12.2). 16 tables all alike: once in 2¹⁰⁵ runs.
func TestKeyTagRandom(t *testing.T) {
	first, second := map[uint8]bool{}, map[uint8]bool{}
	for range 16 {
		tbl := NewTable(1, 0)
		buf := make([]byte, 8)
		r := mustRegister(t, tbl, pdA, buf, 0)
		if err := tbl.Deregister(r); err != nil {
			t.Fatal(err)
		}
		r2 := mustRegister(t, tbl, pdA, buf, 0)
		first[r.Key().Tag()] = true
		second[r2.Key().Tag()-r.Key().Tag()] = true
	}
	if len(first) < 2 || len(second) < 2 {
		t.Errorf("16 tables: first tags %v, steps %v", first, second)
	}
}
