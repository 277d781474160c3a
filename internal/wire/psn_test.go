package wire

import (
	"math/rand/v2"
	"testing"
)

func TestPSNArithmetic(t *testing.T) {
	for _, tc := range []struct {
		p    PSN
		n    uint32
		want PSN
	}{
		{0, 1, 1},
		{0xfffffe, 1, 0xffffff},
		{0xffffff, 1, 0},
		{0xfffff0, 0x20, 0x10},
		{5, 1 << 24, 5},
	} {
		if got := tc.p.Add(tc.n); got != tc.want {
			t.Errorf("%#x.Add(%#x) = %#x, want %#x", tc.p, tc.n, got, tc.want)
		}
		if got := tc.want.Sub(tc.n); got != tc.p {
			t.Errorf("%#x.Sub(%#x) = %#x, want %#x", tc.want, tc.n, got, tc.p)
		}
	}
	if PSN(0xffffff).Next() != 0 {
		t.Error("Next does not wrap")
	}
}

func TestPSNOrder(t *testing.T) {
	for _, tc := range []struct {
		a, b PSN
		diff int32
	}{
		{1, 0, 1},
		{0, 1, -1},
		{0, 0xffffff, 1},           // across the wrap
		{0xffffff, 0, -1},          //
		{0x7fffff, 0, 0x7fffff},    // just inside the horizon: after
		{0x800000, 0, -0x800000},   // half way round counts as before
		{0x123456, 0x123456, 0},    //
		{0x000010, 0xfffff0, 0x20}, //
	} {
		if got := tc.a.Diff(tc.b); got != tc.diff {
			t.Errorf("%#x.Diff(%#x) = %d, want %d", tc.a, tc.b, got, tc.diff)
		}
		if got := tc.a.Less(tc.b); got != (tc.diff < 0) {
			t.Errorf("%#x.Less(%#x) = %v", tc.a, tc.b, got)
		}
		if got := tc.a.LessEq(tc.b); got != (tc.diff <= 0) {
			t.Errorf("%#x.LessEq(%#x) = %v", tc.a, tc.b, got)
		}
	}
}

// TestPSNProperties checks Add/Diff consistency on random values against a
// reference computed with plain integers.
func TestPSNProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		p := PSN(r.Uint32() & PSNMask)
		n := r.Uint32N(1 << 23)
		q := p.Add(n)
		if int64(q.Diff(p)) != int64(n) && n != 0 {
			t.Fatalf("(%#x+%d).Diff(%#x) = %d", p, n, p, q.Diff(p))
		}
		if n > 0 && (!p.Less(q) || q.Less(p)) {
			t.Fatalf("order of %#x and %#x+%d wrong", p, p, n)
		}
		if !q.InWindow(p, n+1) || (n > 0 && q.InWindow(p, n)) || p.Sub(1).InWindow(p, n+1) {
			t.Fatalf("window [%#x, +%d] wrong for %#x", p, n+1, q)
		}
		if uint32(q) > PSNMask {
			t.Fatalf("Add left 24 bits: %#x", q)
		}
	}
}
