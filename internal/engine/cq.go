package engine

import (
	"errors"
	"sync"

	"github.com/goverbs/goverbs/internal/queue"
)

// ErrCQOverrun reports that completions were lost because the CQ was full
// (IBV_EVENT_CQ_ERR). The CQ stays in error; create a bigger one.
var ErrCQOverrun = errors.New("completion queue overrun: completions were lost")

// CQ is a completion queue: a ring of work completions filled by QP turns
// and drained by Poll.
type CQ struct {
	dev  *Device
	mu   sync.Mutex // serialises producers (QP turns of several QPs)
	ring *queue.Ring[WC]
	// overrun is set under mu when a completion did not fit.
	overrun bool
	pollMu  sync.Mutex // serialises consumers
	notify  chan struct{}
}

func newCQ(d *Device, n int) *CQ {
	return &CQ{dev: d, ring: queue.New[WC](n), notify: make(chan struct{}, 1)}
}

// Cap returns the number of completions the CQ holds.
func (cq *CQ) Cap() int { return cq.ring.Cap() }

// push adds a completion; it reports false and marks the CQ in error if
// the ring is full.
func (cq *CQ) push(wc *WC) bool {
	cq.mu.Lock()
	s := cq.ring.Reserve()
	if s == nil {
		cq.overrun = true
		cq.mu.Unlock()
		cq.dev.counters.inc(CQOverflow)
		return false
	}
	*s = *wc
	cq.ring.Commit()
	cq.mu.Unlock()
	select {
	case cq.notify <- struct{}{}:
	default:
	}
	return true
}

// Poll moves up to len(wcs) completions into wcs and returns how many. After
// an overrun it keeps returning the completions it has, then ErrCQOverrun.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	cq.pollMu.Lock()
	defer cq.pollMu.Unlock()
	n := 0
	for n < len(wcs) {
		s := cq.ring.Peek()
		if s == nil {
			break
		}
		wcs[n] = *s
		cq.ring.Pop()
		n++
	}
	if n == 0 {
		cq.mu.Lock()
		over := cq.overrun
		cq.mu.Unlock()
		if over {
			return 0, ErrCQOverrun
		}
	}
	return n, nil
}

// Notify returns a channel that receives a value after completions are
// added; a receive does not guarantee Poll finds one (another poller may
// have taken it), so poll again after waking.
func (cq *CQ) Notify() <-chan struct{} { return cq.notify }
