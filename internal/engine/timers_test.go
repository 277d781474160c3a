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
	base := clockBase + instant(1000*time.Second)
	qps := make([]*QP, 50)
	var want []instant
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
	slices.Sort(want)
	var got []instant
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
