package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestTimerQueueOrder pushes random deadlines and checks they come out in
// order, also after removals.
func TestTimerQueueOrder(t *testing.T) {
	q := newTimerQueue()
	base := time.Unix(1000, 0)
	qps := make([]*QP, 50)
	var want []time.Time
	r := rand.New(rand.NewPCG(1, 1))
	for i := range qps {
		qps[i] = &QP{}
		when := base.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		q.add(qps[i], when)
		if i%5 != 0 {
			want = append(want, when)
		}
	}
	for i := 0; i < len(qps); i += 5 {
		q.remove(qps[i])
	}
	slices.SortFunc(want, func(a, b time.Time) int { return a.Compare(b) })
	var got []time.Time
	for len(q.h) > 0 {
		got = append(got, q.h[0].when)
		q.removeAt(0)
	}
	if !slices.Equal(got, want) {
		t.Errorf("deadlines out of order:\n got %v\nwant %v", got, want)
	}
	if due := q.due(base.Add(time.Hour), nil); len(due) != 0 {
		t.Errorf("empty queue returned %d due QPs", len(due))
	}
}
