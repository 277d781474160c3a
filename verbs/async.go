package verbs

import (
	"fmt"
	"sync"

	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// EventType is the kind of an asynchronous event (enum ibv_event_type).
// It prints as ibv_event_type_str does.
type EventType uint8

// The event types, with their libibverbs values. goverbs raises those
// marked so; the others exist for programs that switch over all of them.
const (
	EventCQErr            = EventType(ib.EventCQErr)            // raised: a CQ overran and lost completions (CQ)
	EventQPFatal          = EventType(ib.EventQPFatal)          // raised: a transport error moved the QP to ERR (QP)
	EventQPReqErr         = EventType(ib.EventQPReqErr)         // raised: the QP received an invalid request and went to ERR (QP)
	EventQPAccessErr      = EventType(ib.EventQPAccessErr)      // raised: the QP received a request its access rights refuse and went to ERR (QP)
	EventCommEst          = EventType(ib.EventCommEst)          // raised: the QP received its first packet while in RTR (QP)
	EventSQDrained        = EventType(ib.EventSQDrained)        // raised: a QP in SQD that asked (QPAttr.EnSQDAsyncNotify) finished the messages it had started (QP)
	EventPathMig          = EventType(ib.EventPathMig)          // IBV_EVENT_PATH_MIG (no alternate paths here)
	EventPathMigErr       = EventType(ib.EventPathMigErr)       // IBV_EVENT_PATH_MIG_ERR
	EventDeviceFatal      = EventType(ib.EventDeviceFatal)      // raised: the device's link closed under it
	EventPortActive       = EventType(ib.EventPortActive)       // raised: the port is up (device open)
	EventPortErr          = EventType(ib.EventPortErr)          // raised: the port is down (device closed, link gone)
	EventLIDChange        = EventType(ib.EventLIDChange)        // IBV_EVENT_LID_CHANGE
	EventPKeyChange       = EventType(ib.EventPKeyChange)       // IBV_EVENT_PKEY_CHANGE
	EventSMChange         = EventType(ib.EventSMChange)         // IBV_EVENT_SM_CHANGE
	EventSRQErr           = EventType(ib.EventSRQErr)           // IBV_EVENT_SRQ_ERR
	EventSRQLimitReached  = EventType(ib.EventSRQLimitReached)  // raised: an armed SRQ fell below its limit (SRQ)
	EventQPLastWQEReached = EventType(ib.EventQPLastWQEReached) // raised: a QP on an SRQ entered ERR and takes no more requests (QP)
	EventClientReregister = EventType(ib.EventClientReregister) // IBV_EVENT_CLIENT_REREGISTER
	EventGIDChange        = EventType(ib.EventGIDChange)        // IBV_EVENT_GID_CHANGE
	EventWQFatal          = EventType(ib.EventWQFatal)          // IBV_EVENT_WQ_FATAL
)

// String returns ibv_event_type_str's text ("SRQ limit reached").
func (e EventType) String() string { return ib.EventType(e).String() }

// AsyncEvent is an asynchronous event (struct ibv_async_event): its type
// and the object it concerns, set according to the type: QP, CQ or SRQ,
// or Port (1) for port events; a device event has none.
type AsyncEvent struct {
	Type EventType
	QP   *QP
	CQ   *CQ
	SRQ  *SRQ
	Port int
}

// String describes the event as ibv_event_type_str names its type, with
// what it concerns: "send queue drained (QP 0x000043)", "port active
// (port 1)".
func (e AsyncEvent) String() string {
	switch {
	case e.QP != nil:
		return fmt.Sprintf("%v (QP 0x%06x)", e.Type, uint32(e.QP.QPN()))
	case e.CQ != nil:
		return fmt.Sprintf("%v (CQ)", e.Type)
	case e.SRQ != nil:
		return fmt.Sprintf("%v (SRQ)", e.Type)
	case e.Port != 0:
		return fmt.Sprintf("%v (port %d)", e.Type, e.Port)
	}
	return e.Type.String()
}

// asyncEventDepth is the room AsyncEvents' channel has for a reader that
// falls behind; the device holds more (256) before it drops events and
// counts them (AsyncEventDropped).
const asyncEventDepth = 16

// AsyncEvents returns the device's asynchronous events
// (ibv_get_async_event), for a range or a select. Nothing needs
// acknowledging. Raising an event never waits for the reader: events the
// reader has no room for are dropped and counted (AsyncEventDropped). The
// channel is closed after the device is: its last event is EventPortErr.
// Events about an object closed before they were read are left out.
func (d *Device) AsyncEvents() <-chan AsyncEvent { return d.async.out }

// asyncEvents forwards the engine's events to AsyncEvents, naming the
// verbs objects the engine's concern.
type asyncEvents struct {
	out  chan AsyncEvent
	done chan struct{} // closed when the forwarder ended

	mu     sync.Mutex
	owners map[any]any // engine QP, CQ and SRQ → the verbs object
}

func (a *asyncEvents) start(e *engine.Device) {
	a.out = make(chan AsyncEvent, asyncEventDepth)
	a.done = make(chan struct{})
	a.owners = make(map[any]any)
	go a.forward(e)
}

// add records the verbs object o of engine object e.
func (a *asyncEvents) add(e, o any) {
	a.mu.Lock()
	a.owners[e] = o
	a.mu.Unlock()
}

// remove forgets a closed object: later events about it are left out.
func (a *asyncEvents) remove(e any) {
	a.mu.Lock()
	delete(a.owners, e)
	a.mu.Unlock()
}

// forward runs until the device is closed, then hands on what the device
// still held, as far as out has room, and closes out.
func (a *asyncEvents) forward(e *engine.Device) {
	defer close(a.done)
	defer close(a.out)
	for {
		select {
		case ev := <-e.Events():
			a.deliver(e, &ev, false)
		case <-e.Done():
			for {
				select {
				case ev := <-e.Events():
					a.deliver(e, &ev, true)
				default:
					return
				}
			}
		}
	}
}

// deliver hands ev to the reader: at once if out has room, else, unless
// final, once the reader takes one or, if the device closes first, not at
// all (counted).
func (a *asyncEvents) deliver(e *engine.Device, ev *engine.Event, final bool) {
	v, ok := a.translate(ev)
	if !ok {
		return
	}
	select {
	case a.out <- v:
		return
	default:
	}
	if !final {
		select {
		case a.out <- v:
			return
		case <-e.Done():
		}
	}
	e.DropEvent()
}

// translate names the verbs object of ev; ok is false if it was closed.
func (a *asyncEvents) translate(ev *engine.Event) (AsyncEvent, bool) {
	v := AsyncEvent{Type: EventType(ev.Type), Port: int(ev.Port)}
	a.mu.Lock()
	defer a.mu.Unlock()
	var ok bool
	switch {
	case ev.QP != nil:
		v.QP, ok = a.owners[ev.QP].(*QP)
	case ev.CQ != nil:
		v.CQ, ok = a.owners[ev.CQ].(*CQ)
	case ev.SRQ != nil:
		v.SRQ, ok = a.owners[ev.SRQ].(*SRQ)
	default:
		ok = true
	}
	return v, ok
}
