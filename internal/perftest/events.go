package perftest

import (
	"context"
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/verbs"
)

// createCQ creates a CQ of n entries; with -e on a completion channel of
// its own, armed (perftest arms its CQs at setup, doc/tools.md §2.9).
func (s *session) createCQ(n int) (*verbs.CQ, error) {
	if !s.cfg.Events {
		return s.dev.CreateCQ(n)
	}
	ch, err := s.dev.CreateCompChannel()
	if err != nil {
		return nil, err
	}
	cq, err := s.dev.CreateCQWithChannel(n, ch)
	if err != nil {
		ch.Close()
		return nil, err
	}
	if err := cq.ReqNotify(false); err != nil {
		return nil, fmt.Errorf("Couldn't request CQ notification: %w", err)
	}
	return cq, nil
}

// wait returns at least one completion of cq, an error, or ctx's error.
// Without -e it is cq.Wait, which spins briefly; with -e it sleeps on the
// CQ's channel whenever a poll finds nothing, and on each event
// acknowledges it and arms the CQ again before polling, as perftest's
// ctx_notify_events does. The CQ is always armed before the poll that
// comes before a sleep, or its event is already queued, so no completion
// is slept through.
func (s *session) wait(ctx context.Context, cq *verbs.CQ, wcs []verbs.WC) (int, error) {
	if !s.cfg.Events {
		return cq.Wait(ctx, wcs)
	}
	for {
		if n, err := cq.Poll(wcs); n > 0 || err != nil {
			return n, err
		}
		if _, err := cq.Channel().GetCQEvent(ctx); err != nil {
			if ctx.Err() != nil {
				return 0, err
			}
			return 0, fmt.Errorf("Failed to get cq_event: %w", err)
		}
		cq.AckEvents(1)
		if err := cq.ReqNotify(false); err != nil {
			return 0, fmt.Errorf("Couldn't request CQ notification: %w", err)
		}
	}
}

// waitEither returns once the send or the receive CQ may hold new
// completions, or with ctx's error; the caller polls both again. Without
// -e it sleeps on both CQs' notifications; with -e it takes an event of
// either channel, acknowledges it and arms that CQ again, as perftest 4.5's
// bidirectional loop does with its one channel. Each CQ is either armed or
// has its event waiting, so no completion is slept through.
func (s *session) waitEither(ctx context.Context) error {
	if !s.cfg.Events {
		select {
		case <-s.scq.Notify():
		case <-s.rcq.Notify():
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	var cq *verbs.CQ
	select {
	case cq = <-s.scq.Channel().Events():
	case cq = <-s.rcq.Channel().Events():
	case <-ctx.Done():
		return ctx.Err()
	}
	if cq == nil {
		return errors.New("Failed to get cq_event: the device is closed")
	}
	cq.AckEvents(1)
	if err := cq.ReqNotify(false); err != nil {
		return fmt.Errorf("Couldn't request CQ notification: %w", err)
	}
	return nil
}

// closeCQs closes the CQs and, with -e, their channels, after the QPs.
func (s *session) closeCQs() {
	for _, cq := range []*verbs.CQ{s.scq, s.rcq} {
		if cq == nil {
			continue
		}
		cq.Close()
		if ch := cq.Channel(); ch != nil {
			ch.Close()
		}
	}
}
