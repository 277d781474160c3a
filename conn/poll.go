package conn

import (
	"sync/atomic"
	"time"
)

// Bounds of the adaptive polling window (SetBusyPoll(0), the default).
// The top is where a wake-up (tens of microseconds on a virtual machine,
// a few on bare metal) is cheap next to the gap it ends, so polling
// longer buys nothing; the window starts there so that the first gaps of
// a conversation are measured rather than slept through.
const (
	maxPollWindow = 200 * time.Microsecond
	// minPollWindow: below it a window is switched off (0) rather than
	// kept at a size that polls too briefly to catch anything.
	minPollWindow = time.Microsecond
)

// pollWait decides, each time a receive finds the socket empty, whether to
// poll it again or sleep until it is readable, and tunes itself from what
// happens: the receive loop of a busy device never pays a wake-up and an
// idle one sleeps, using no CPU.
//
// A wait starts at the first empty poll. When the datagram that ends it
// arrives, its gap (the time since the wait started) is what polling would
// have had to cover. A gap within maxPollWindow, whether polling caught it
// or the receiver slept through its end, aims the window at twice the gap:
// a longer target is taken at once, so that the next gap of the
// conversation, which is like this one, is caught; a shorter one is
// approached by an eighth of the difference, so that a burst of short gaps
// does not forget the longer ones between them. A gap beyond
// maxPollWindow (traffic paused) shrinks the window by an eighth, not at
// once, because one stray pause (a descheduled peer) must not cost a busy
// conversation its polling; a device that stays idle polls once, for one
// window, after its last datagram, and then sleeps.
//
// pollWait is used by the one goroutine receiving (under UDPBind.recvMu),
// and by a TryRecvCoalesced when the receive is shared, each under the
// gate; only mode is shared otherwise.
//
// It reads the monotonic clock alone (monotime), at half the cost of
// time.Now, and not at all on the way from a poll that returned datagrams
// to the engine: the wait that poll ends is timed to the empty poll
// before it, a poll's length short of the truth, which is nothing at the
// scale of a window.
type pollWait struct {
	// mode is SetBusyPoll's argument in nanoseconds: > 0 a fixed window,
	// < 0 no polling (pure event mode), 0 adaptive.
	mode    atomic.Int64
	window  time.Duration // the adaptive window
	waiting bool          // a wait is under way: a poll found the socket empty
	slept   bool          // its polling ended, so the receiver slept
	start   time.Duration // when the wait started (monotime)
	last    time.Duration // when its latest empty poll was
}

// epoch is the origin of monotime.
var epoch = time.Now()

// monotime reads the monotonic clock (time.Since reads only it).
func monotime() time.Duration { return time.Since(epoch) }

func (w *pollWait) init() { w.window = maxPollWindow }

// empty is called when a poll found the socket empty and reports whether
// to poll again (true) or sleep until the socket is readable.
func (w *pollWait) empty(closed *atomic.Bool) bool {
	w.last = monotime()
	if !w.waiting {
		w.waiting, w.slept, w.start = true, false, w.last
	}
	if w.last-w.start < w.limit() && !closed.Load() {
		return true
	}
	w.slept = true
	return false
}

// limit returns how long the wait that starts now may poll.
func (w *pollWait) limit() time.Duration {
	switch m := time.Duration(w.mode.Load()); {
	case m > 0:
		return m
	case m < 0:
		return 0
	}
	return w.window
}

// arrived is called when a poll returned datagrams; it ends the current
// wait, if any, and learns from its gap.
func (w *pollWait) arrived() {
	if !w.waiting {
		return // traffic is flowing: no wait, no clock read
	}
	end := w.last
	if w.slept {
		end = monotime() // the sleep, not the polling, ended it
	}
	w.learn(end - w.start)
	w.waiting = false
}

// learn adapts the window to a wait that lasted gap.
func (w *pollWait) learn(gap time.Duration) {
	target := time.Duration(0)
	if gap <= maxPollWindow {
		target = min(2*gap, maxPollWindow)
	}
	if target >= w.window {
		w.window = target
		return
	}
	w.window -= (w.window - target) / 8
	if w.window < minPollWindow {
		w.window = 0
	}
}
