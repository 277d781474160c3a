package conn

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPollWaitAdapts: the adaptive window grows at once to twice a short
// gap, creeps down toward shorter ones, shrinks by an eighth per long
// pause down to off, and stays within its bounds; the fixed and off modes
// ignore it.
func TestPollWaitAdapts(t *testing.T) {
	const us = time.Microsecond
	var w pollWait
	w.init()
	if got := w.limit(); got != maxPollWindow {
		t.Fatalf("a new wait polls %v, want %v", got, maxPollWindow)
	}
	w.window = 10 * us
	w.learn(30 * us)
	if w.window != 60*us {
		t.Fatalf("after a 30 µs gap the window is %v, want 60 µs", w.window)
	}
	w.learn(150 * us)
	if w.window != maxPollWindow {
		t.Fatalf("after a 150 µs gap the window is %v, want the %v cap", w.window, maxPollWindow)
	}
	w.learn(20 * us) // target 40 µs: an eighth of the way down
	if want := maxPollWindow - (maxPollWindow-40*us)/8; w.window != want {
		t.Fatalf("after a 20 µs gap the window is %v, want %v", w.window, want)
	}
	before := w.window
	w.learn(time.Second)
	if want := before - before/8; w.window != want {
		t.Fatalf("after a pause the window is %v, want %v", w.window, want)
	}
	for range 100 {
		w.learn(time.Second)
	}
	if w.window != 0 {
		t.Fatalf("after 100 pauses the window is %v, want 0", w.window)
	}
	w.learn(5 * us)
	if w.window != 10*us {
		t.Fatalf("a short gap after polling stopped: window %v, want 10 µs", w.window)
	}

	w.mode.Store(int64(70 * us))
	if got := w.limit(); got != 70*us {
		t.Fatalf("fixed mode polls %v, want 70 µs", got)
	}
	w.mode.Store(-1)
	if got := w.limit(); got != 0 {
		t.Fatalf("off mode polls %v, want 0", got)
	}
}

// TestPollWaitWait: a wait polls while its mode allows and the bind is
// open, and the datagram that arrives ends it.
func TestPollWaitWait(t *testing.T) {
	var closed atomic.Bool
	var w pollWait
	w.init()
	w.mode.Store(int64(-1))
	if w.empty(&closed) {
		t.Fatal("off mode polls an empty socket")
	}
	w.arrived()
	w.mode.Store(int64(time.Hour))
	if !w.empty(&closed) {
		t.Fatal("fixed mode sleeps at once")
	}
	closed.Store(true)
	if w.empty(&closed) {
		t.Fatal("a closed bind keeps polling")
	}
	w.arrived() // ends the wait (what it learns is TestPollWaitAdapts')
	if w.waiting {
		t.Fatal("a datagram did not end the wait")
	}
}

// TestPollWaitTimesSleep: a wait whose polling ended is timed to the
// datagram that woke the receiver, not to its last poll, so that the
// window learns the gap it slept through.
func TestPollWaitTimesSleep(t *testing.T) {
	const us = time.Microsecond
	var closed atomic.Bool
	var w pollWait
	w.init()
	w.window = 10 * us
	for w.empty(&closed) { // polls for 10 µs, then sleeps
	}
	for t0 := monotime(); monotime()-t0 < 60*us; { // the sleep, without a timer's slack
	}
	w.arrived()
	// A gap of 70 µs or more aims the window at twice it; one beyond
	// maxPollWindow (the test descheduled) shrinks it. Timed to the last
	// poll, the gap would be about 10 µs and the window about 20.
	if w.window < 140*us && w.window >= 10*us {
		t.Fatalf("after polling 10 µs and sleeping 60 the window is %v, want >= 140 µs", w.window)
	}
}
