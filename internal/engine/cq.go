package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/queue"
)

// ErrCQOverrun reports that completions were lost because the CQ was full
// (IBV_EVENT_CQ_ERR). The CQ stays in error; create a bigger one.
var ErrCQOverrun = errors.New("completion queue overrun: completions were lost")

// CQ is a completion queue: a ring of work completions filled by QP turns
// and drained by Poll.
type CQ struct {
	dev *Device
	mu  sync.Mutex // serialises producers (QP turns of several QPs)
	// ring is replaced by Resize, holding both mu and pollMu; Poll
	// loads it without either to find it empty (during a Resize it may
	// find the old one drained: none for that look, as if they came
	// a moment later).
	ring atomic.Pointer[queue.Ring[WC]]
	// overrun is set under mu when a completion did not fit.
	overrun atomic.Bool
	pollMu  sync.Mutex // serialises consumers
	notify  chan struct{}
	// armed is the pending notification request (notify.go), under mu;
	// event runs when it fires.
	armed arm
	event func()
	// closed is set by Close; Poll and Resize then fail with ErrClosed.
	closed atomic.Bool
}

func newCQ(d *Device, n int) *CQ {
	cq := &CQ{dev: d, notify: make(chan struct{}, 1)}
	cq.ring.Store(queue.New[WC](n))
	return cq
}

// Cap returns the number of completions the CQ holds: its ring's, which
// Resize replaces rather than changes, so no lock is needed.
func (cq *CQ) Cap() int { return cq.ring.Load().Cap() }

// Close makes later Polls fail with ErrClosed. The caller makes sure no QP
// completes into the CQ any more (ibv_destroy_cq refuses with EBUSY).
func (cq *CQ) Close() { cq.closed.Store(true) }

// Resize gives the CQ room for at least n completions, keeping the ones it
// holds (ibv_resize_cq). It fails if n is out of range or smaller than the
// number of completions waiting.
func (cq *CQ) Resize(n int) error {
	if n < 1 || n > MaxCQE {
		return fmt.Errorf("%w: %d entries, must be 1..%d", ErrInvalidArgument, n, MaxCQE)
	}
	cq.pollMu.Lock()
	defer cq.pollMu.Unlock()
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed.Load() {
		return ErrClosed
	}
	old := cq.ring.Load()
	if held := old.Len(); n < held {
		return fmt.Errorf("%w: %d entries, but %d completions are waiting", ErrInvalidArgument, n, held)
	}
	r := queue.New[WC](n)
	for s := old.Peek(); s != nil; s = old.Peek() {
		*r.Reserve() = *s
		r.Commit()
		old.Pop()
	}
	cq.ring.Store(r)
	return nil
}

// push adds a completion; it reports false and marks the CQ in error if
// the ring is full.
func (cq *CQ) push(wc *WC) bool { return cq.pushSolicited(wc, false) }

// pushSolicited is push of a receive completion whose message may have
// asked for a solicited event (BTH SE).
func (cq *CQ) pushSolicited(wc *WC, solicited bool) bool {
	cq.mu.Lock()
	ring := cq.ring.Load()
	s := ring.Reserve()
	if s == nil {
		first := !cq.overrun.Swap(true)
		cq.mu.Unlock()
		cq.dev.counters.inc(CQOverflow)
		if first {
			cq.dev.raise(Event{Type: ib.EventCQErr, CQ: cq})
		}
		return false
	}
	*s = *wc
	ring.Commit()
	event := cq.fires(wc, solicited)
	cq.mu.Unlock()
	select {
	case cq.notify <- struct{}{}:
	default:
	}
	if event && cq.event != nil {
		cq.event()
	}
	return true
}

// Poll moves up to len(wcs) completions into wcs and returns how many. After
// an overrun it keeps returning the completions it has, then ErrCQOverrun;
// once the device is closed, the same with ErrClosed, so a poller drains
// the flush completions of the close and then learns why no more come. A
// closed CQ returns ErrClosed at once.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	if cq.closed.Load() {
		return 0, ErrClosed
	}
	if cq.ring.Load().Len() == 0 {
		// A busy poller's usual look: no lock taken (the producers'
		// mu, the consumers' pollMu), two fewer pairs of atomic
		// operations for each look of a spinning Wait
		// (BenchmarkPollEmpty).
		return 0, cq.emptyErr()
	}
	cq.pollMu.Lock()
	defer cq.pollMu.Unlock()
	ring := cq.ring.Load()
	n := 0
	for n < len(wcs) {
		s := ring.Peek()
		if s == nil {
			break
		}
		wcs[n] = *s
		ring.Pop()
		n++
	}
	if n == 0 {
		return 0, cq.emptyErr() // another poller took them
	}
	return n, nil
}

// emptyErr is what Poll returns with no completions: why none will come,
// or nil.
func (cq *CQ) emptyErr() error {
	switch {
	case cq.overrun.Load():
		return ErrCQOverrun
	case cq.dev.Dead():
		return ErrClosed
	}
	return nil
}

// Notify returns a channel that receives a value after completions are
// added; a receive does not guarantee Poll finds one (another poller may
// have taken it), so poll again after waking.
func (cq *CQ) Notify() <-chan struct{} { return cq.notify }
