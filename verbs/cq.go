package verbs

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/engine"
)

// CQ is a completion queue (struct ibv_cq).
type CQ struct {
	dev *Device
	c   *engine.CQ
	ch  *CompChannel // nil without one

	// Guarded by ch.mu: the completion events receivers took, and those
	// acknowledged.
	events, acked uint64

	empty atomic.Uint32 // Polls that found nothing, for their yields

	// Guarded by dev.mu.
	closed bool
	qps    int // open QPs completing into the CQ, once per queue
}

// Poll's and Wait's errors, built once so a failing poll allocates
// nothing either.
var (
	errPollOverrun = errorf("poll CQ", "%w", ErrCQOverrun)
	errPollClosed  = errorf("poll CQ", "%w", ErrClosed)
	errWaitOverrun = errorf("wait CQ", "%w", ErrCQOverrun)
	errWaitClosed  = errorf("wait CQ", "%w", ErrClosed)
	errWaitEmpty   = errorf("wait CQ", "%w: no room for a completion (empty wcs)", ErrInvalidArgument)
)

// Poll moves up to len(wcs) completions into wcs and returns how many
// (ibv_poll_cq). It returns an error only when none are left to return
// and none will come: after completions were lost because the CQ was full
// (ErrCQOverrun), and once the CQ or its device is closed (ErrClosed; a
// closed device's CQ first returns the flush completions of the close).
//
// Poll never blocks. When it finds nothing it receives for the device on
// the calling goroutine, as Wait does while it spins (doc/design.md §4,
// "A waiter receives"), and every few such polls it yields the processor:
// the NIC is goroutines of this process, and a loop spinning on a Poll
// that did neither held a processor they needed to deliver what it waited
// for (doc/performance.md has the figures). When it yields it receives for
// one of the process's other devices as well, each in turn: their receive
// loops wait for the runtime to look at the network, which it does not
// while a goroutine that only yields is runnable (with one processor,
// every 10 ms).
func (cq *CQ) Poll(wcs []WC) (int, error) {
	n, err := cq.poll(wcs, errPollOverrun, errPollClosed)
	if n == 0 && err == nil {
		cq.progress(cq.empty.Add(1) - 1)
	}
	return n, err
}

// progress receives for the device on the calling goroutine, the k-th
// time a poll found nothing, and yields the processor when that received
// nothing and the device asks for it, or every yieldEvery-th time, when it
// first receives for one of the process's other devices, each in turn
// (Poll): one more receive a yield, however many devices the process has.
// It reports whether it received.
func (cq *CQ) progress(k uint32) bool {
	got, yield := cq.dev.e.Progress()
	turn := k%yieldEvery == yieldEvery-1
	if !got && (yield || turn) {
		if all := *registry.all.Load(); turn && len(all) > 1 {
			i := int(k/yieldEvery) % len(all)
			if all[i] == cq.dev {
				i = (i + 1) % len(all)
			}
			all[i].e.Progress()
		}
		runtime.Gosched()
	}
	return got
}

// poll is Poll without the receiving and yielding, which Wait does its
// own way; it fails with the caller's overrun or closed error.
func (cq *CQ) poll(wcs []WC, overrun, closed error) (int, error) {
	n, err := cq.c.Poll(engineWCs(wcs))
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, ErrCQOverrun):
		return n, overrun
	}
	return n, closed
}

// Notify returns a channel that receives a value after new completions
// arrive, for waiting without spinning; poll again after each wake-up. It
// does not wake for a closing device: Wait does.
func (cq *CQ) Notify() <-chan struct{} { return cq.c.Notify() }

// spinPolls is how many empty polls Wait makes before it sleeps on
// Notify. Between them it receives for the device itself while the
// receive loop waits (engine.Device.Progress), and yields the processor
// when Progress says to, every yieldEvery polls in any case, and after a
// receive that completed nothing here: the NIC is goroutines of this
// process, so a poller that never yields delays the very packets it waits
// for (measured against rxe on two cores: a 3.4 ms median ACK delay), and
// its timers need turns too. The last is a stream's case (the ACKs of
// ib_write_bw, of which one in a hundred completes a signalled work
// request): without that yield its 8-byte message rate was 8 % lower, in
// 8 of 12 alternated pairs; with it, as it was before Wait received. A
// ping-pong's receive completes what it waits for, and Wait returns.
const (
	spinPolls  = 64
	yieldEvery = 8
)

// Wait is Poll that returns only with at least one completion, an error
// (ErrClosed once the device is closed and its completions are drained;
// ErrInvalidArgument at once for an empty wcs, which no completion could
// end), or, once ctx is done, ctx's error. It spins briefly before it sleeps,
// and while it spins it receives for the device, on the calling
// goroutine, whenever the device's receive loop is waiting (doc/design.md
// §4, "A waiter receives").
func (cq *CQ) Wait(ctx context.Context, wcs []WC) (int, error) {
	if len(wcs) == 0 {
		return 0, errWaitEmpty
	}
	received := false
	for i := 0; ; i++ {
		n, err := cq.poll(wcs, errWaitOverrun, errWaitClosed)
		if n > 0 || err != nil {
			return n, err
		}
		if i == 0 {
			// ACKs owed (engine.Device.SettleOwed) go once the caller
			// waits for something not there yet. Completions already
			// waiting are returned first: they may be what the caller
			// answers, and its answer's turn sends the ACK with it.
			// ib_send_lat's loop waits for its send's completion, whose
			// receive brings the peer's next SEND too, then for that
			// receive: settling first sent the ACK in a system call of
			// its own, ahead of the answer.
			cq.dev.e.SettleOwed()
		}
		if i < spinPolls {
			if received {
				received = false
				runtime.Gosched()
				continue
			}
			received = cq.progress(uint32(i))
			continue
		}
		select {
		case <-cq.Notify():
		case <-cq.dev.e.Done():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Cap returns the number of completions the CQ holds.
func (cq *CQ) Cap() int { return cq.c.Cap() }

// Resize gives the CQ room for at least cqe completions, keeping those it
// holds (ibv_resize_cq). It fails with ErrInvalidArgument if cqe is out of
// range or fewer than the completions waiting.
func (cq *CQ) Resize(cqe int) error {
	if err := cq.c.Resize(cqe); err != nil {
		return errorf("resize CQ", "%w", err)
	}
	return nil
}

// Close destroys the CQ (ibv_destroy_cq). It fails with ErrBusy while a
// QP completes into it, or while completion events taken from its channel
// are not acknowledged; completions and events it still holds are
// discarded. Closing it again returns nil.
func (cq *CQ) Close() error {
	cq.dev.mu.Lock()
	defer cq.dev.mu.Unlock()
	if cq.closed {
		return nil
	}
	if cq.qps > 0 {
		return errorf("destroy CQ", "%w: QPs complete into it (%d send and receive queues; close the QPs first)", ErrBusy, cq.qps)
	}
	if cq.ch != nil {
		if n := cq.ch.dropEvents(cq); n > 0 {
			return errorf("destroy CQ", "%w: %d completion event(s) not acknowledged", ErrBusy, n)
		}
		cq.ch.cqs--
	}
	cq.closed = true
	cq.c.Close()
	cq.dev.async.remove(cq.c)
	return nil
}
