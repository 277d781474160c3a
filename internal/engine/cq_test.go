package engine

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

// TestCQPollAcrossResizes: a producer pushes completions while another
// goroutine resizes the CQ back and forth and a consumer polls, most of
// its looks finding the ring empty without a lock (Poll's fast path).
// Every completion arrives once, in order; the race detector checks that
// the lock-free look and Resize's swap of the ring do not race.
func TestCQPollAcrossResizes(t *testing.T) {
	cq, err := newLoneDevice(t).CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		for i := 1; i <= n; i++ {
			for cq.ring.Load().Len() >= 32 {
				runtime.Gosched() // the consumer's turn: 64 slots never fill
			}
			if !cq.push(&WC{WRID: uint64(i)}) {
				t.Errorf("completion %d did not fit", i)
				return
			}
		}
	})
	wg.Go(func() {
		for size := 64; ; size = 192 - size { // 64, 128, 64, ...
			select {
			case <-done:
				return
			default:
			}
			if err := cq.Resize(size); err != nil && !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("resize to %d: %v", size, err)
				return
			}
		}
	})
	wcs := make([]WC, 8)
	next := uint64(1)
	for next <= n && !t.Failed() {
		got, err := cq.Poll(wcs)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		for _, wc := range wcs[:got] {
			if wc.WRID != next {
				t.Fatalf("completion %d came where %d was due", wc.WRID, next)
			}
			next++
		}
	}
	close(done)
	wg.Wait()
}
