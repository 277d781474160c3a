package engine

import "testing"

// TestSooner: the earlier of two deadlines, where no time (zero) never
// wins, whichever side it is on.
func TestSooner(t *testing.T) {
	const a, b = clockBase + 10, clockBase + 20
	for _, tc := range []struct{ x, y, want instant }{
		{a, b, a}, {b, a, a}, {a, a, a},
		{0, b, b}, {a, 0, a}, {0, 0, 0},
	} {
		if got := sooner(tc.x, tc.y); got != tc.want {
			t.Errorf("sooner(%d, %d) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
	}
}
