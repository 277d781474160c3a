package verbs

import (
	"context"
	"sync"
)

// CompChannel is a completion event channel (struct ibv_comp_channel): the
// CQs created on it with CreateCQWithChannel deliver an event through it
// each time one that ReqNotify armed gets a completion, so a consumer can
// sleep instead of polling. One channel may serve several CQs.
//
// Every event received, from GetCQEvent or straight from Events, must be
// acknowledged with CQ.AckEvents before the CQ closes.
type CompChannel struct {
	dev *Device
	// events is Events; a forwarding goroutine hands it the queued events
	// one at a time, so that an event counts as delivered exactly when a
	// receiver took it.
	events chan *CQ
	wake   chan struct{} // an event was queued
	revoke chan struct{} // CQ.Close wants the event in hand back
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when the forwarder has ended

	mu sync.Mutex
	// queue holds the events not yet handed out, oldest first, in a ring
	// that grows when full.
	queue      []*CQ
	head, n    int
	inHand     *CQ       // the event the forwarder is offering
	revoked    *CQ       // the CQ whose event in hand is to be dropped
	handedBack sync.Cond // inHand changed

	// Guarded by dev.mu.
	closed bool
	cqs    int // open CQs created on the channel
}

// CreateCompChannel creates a completion event channel
// (ibv_create_comp_channel).
func (d *Device) CreateCompChannel() (*CompChannel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errorf("create completion channel", "device %s: %w", d.name, ErrClosed)
	}
	ch := &CompChannel{dev: d, events: make(chan *CQ), wake: make(chan struct{}, 1), revoke: make(chan struct{}, 1),
		done: make(chan struct{}), exited: make(chan struct{}), queue: make([]*CQ, 4)}
	ch.handedBack.L = &ch.mu
	go ch.forward()
	return ch, nil
}

// CreateCQWithChannel is CreateCQ for a CQ whose completion events, once
// ReqNotify arms it, go to ch (ibv_create_cq with a channel).
func (d *Device) CreateCQWithChannel(cqe int, ch *CompChannel) (*CQ, error) {
	const verb = "create CQ"
	if ch == nil {
		return nil, errorf(verb, "%w: no completion channel", ErrInvalidArgument)
	}
	if ch.dev != d {
		return nil, errorf(verb, "%w: completion channel belongs to another device", ErrInvalidArgument)
	}
	cq, err := d.CreateCQ(cqe)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch.closed {
		cq.c.Close()
		return nil, errorf(verb, "completion channel: %w", ErrClosed)
	}
	ch.cqs++
	cq.ch = ch
	cq.c.SetEventHandler(func() { ch.queueEvent(cq) })
	return cq, nil
}

// Events returns the channel's events for use in a select: each value is
// a CQ whose armed notification fired. It is closed once the channel is
// closed, or its device is and the events it had are taken.
func (ch *CompChannel) Events() <-chan *CQ { return ch.events }

var errGetEventClosed = errorf("get CQ event", "%w", ErrClosed)

// GetCQEvent waits for the next completion event and returns its CQ
// (ibv_get_cq_event). The CQ is disarmed: poll it, ReqNotify it again and
// poll once more, and acknowledge the event with AckEvents. It fails with
// ErrClosed once the channel or its device is closed and no event is left,
// and with ctx's error when ctx is done first.
func (ch *CompChannel) GetCQEvent(ctx context.Context) (*CQ, error) {
	select {
	case cq, ok := <-ch.events:
		if !ok {
			return nil, errGetEventClosed
		}
		return cq, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close destroys the channel (ibv_destroy_comp_channel). It fails with
// ErrBusy while a CQ created on it is open. Closing it again returns nil.
func (ch *CompChannel) Close() error {
	ch.dev.mu.Lock()
	defer ch.dev.mu.Unlock()
	if ch.closed {
		return nil
	}
	if ch.cqs > 0 {
		return errorf("destroy completion channel", "%w: %d CQ(s) use it", ErrBusy, ch.cqs)
	}
	ch.closed = true
	close(ch.done)
	<-ch.exited
	return nil
}

// queueEvent queues an event of cq; it runs in the engine's turn that
// added the completion.
func (ch *CompChannel) queueEvent(cq *CQ) {
	ch.mu.Lock()
	ch.grow()
	ch.queue[(ch.head+ch.n)%len(ch.queue)] = cq
	ch.n++
	ch.mu.Unlock()
	ch.signal()
}

// grow makes room for one more event in the queue; under ch.mu.
func (ch *CompChannel) grow() {
	if ch.n < len(ch.queue) {
		return
	}
	q := make([]*CQ, 2*len(ch.queue))
	for i := range ch.n {
		q[i] = ch.queue[(ch.head+i)%len(ch.queue)]
	}
	ch.queue, ch.head = q, 0
}

// signal wakes the forwarder.
func (ch *CompChannel) signal() {
	select {
	case ch.wake <- struct{}{}:
	default:
	}
}

// forward offers the queued events on ch.events one at a time, counting
// each on its CQ when a receiver takes it. It ends when the channel is
// closed, or when the device is and no event is left.
func (ch *CompChannel) forward() {
	defer close(ch.exited)
	defer close(ch.events)
	dead, deadSeen := ch.dev.e.Done(), false
	for {
		ch.mu.Lock()
		for ch.n == 0 {
			ch.mu.Unlock()
			if deadSeen {
				return // the events of the close's flush are taken
			}
			select {
			case <-ch.wake:
			case <-ch.done:
				return
			case <-dead:
				deadSeen = true
			}
			ch.mu.Lock()
		}
		cq := ch.queue[ch.head]
		ch.queue[ch.head] = nil
		ch.head = (ch.head + 1) % len(ch.queue)
		ch.n--
		ch.inHand = cq
		ch.mu.Unlock()
		if !ch.offer(cq) {
			return
		}
	}
}

// offer hands cq's event to a receiver unless CQ.Close revokes it; it
// reports false when the channel closed meanwhile.
func (ch *CompChannel) offer(cq *CQ) bool {
	for {
		select {
		case ch.events <- cq:
			ch.mu.Lock()
			cq.events++
			ch.inHand = nil
			ch.handedBack.Broadcast()
			ch.mu.Unlock()
			return true
		case <-ch.revoke:
			ch.mu.Lock()
			if ch.revoked == cq {
				ch.inHand, ch.revoked = nil, nil
				ch.handedBack.Broadcast()
				ch.mu.Unlock()
				return true
			}
			ch.mu.Unlock() // a revocation that lost to a delivery
		case <-ch.done:
			return false
		}
	}
}

// dropEvents removes the events of cq that no receiver took, before cq
// closes, unless a receiver took events of cq it has not acknowledged:
// then it reports how many, and cq stays open and keeps its events. It
// runs under dev.mu.
func (ch *CompChannel) dropEvents(cq *CQ) uint64 {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.inHand == cq {
		// Revoked, or taken: the forwarder counts an event it handed over
		// only after its receiver has it, and the receiver may have
		// acknowledged it already. Either way, the count is right once
		// the forwarder lets go.
		taken := cq.events
		ch.revoked = cq
		select {
		case ch.revoke <- struct{}{}:
		default:
		}
		for ch.inHand == cq {
			ch.handedBack.Wait()
		}
		ch.revoked = nil
		if cq.events == taken && cq.events != cq.acked {
			// Revoked, but cq stays open for events taken before: the
			// event goes back where it was, first in line.
			ch.grow()
			ch.head = (ch.head + len(ch.queue) - 1) % len(ch.queue)
			ch.queue[ch.head] = cq
			ch.n++
			ch.signal()
		}
	}
	if cq.events != cq.acked {
		return cq.events - cq.acked
	}
	k := 0
	for i := range ch.n {
		if c := ch.queue[(ch.head+i)%len(ch.queue)]; c != cq {
			ch.queue[(ch.head+k)%len(ch.queue)] = c
			k++
		}
	}
	for i := k; i < ch.n; i++ {
		ch.queue[(ch.head+i)%len(ch.queue)] = nil
	}
	ch.n = k
	return 0
}

// ReqNotify's errors, built once so that arming allocates nothing.
var (
	errNotifyClosed    = errorf("req notify CQ", "%w", ErrClosed)
	errNotifyNoChannel = errorf("req notify CQ", "%w: the CQ has no completion channel", ErrInvalidArgument)
)

// ReqNotify arms the CQ for one completion event on its channel
// (ibv_req_notify_cq): the next completion added, or with solicitedOnly
// the next receive of a message sent with SendSolicited, or any failed
// completion. Completions already in the CQ do not count: after arming,
// poll once more, so that none added between the last poll and the arm is
// left waiting (the loop is poll, arm, poll, then sleep in GetCQEvent).
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if cq.ch == nil {
		return errNotifyNoChannel
	}
	if cq.c.ReqNotify(solicitedOnly) != nil {
		return errNotifyClosed
	}
	return nil
}

// AckEvents acknowledges n completion events of the CQ taken from its
// channel (ibv_ack_cq_events). Close refuses while events are
// unacknowledged. Acknowledge in batches to save the lock.
func (cq *CQ) AckEvents(n int) {
	if cq.ch == nil || n <= 0 {
		return
	}
	cq.ch.mu.Lock()
	cq.acked += uint64(n)
	cq.ch.mu.Unlock()
}

// Channel returns the completion channel the CQ was created on, or nil
// (struct ibv_cq's channel).
func (cq *CQ) Channel() *CompChannel { return cq.ch }
