package engine

import "github.com/goverbs/goverbs/internal/ib"

// Event is an asynchronous event (struct ibv_async_event): its type and
// the object it concerns, a QP, a CQ or an SRQ, or for port and device
// events none (Port is then 1).
type Event struct {
	Type ib.EventType
	QP   *QP
	CQ   *CQ
	SRQ  *SRQ
	Port uint8
}

// eventDepth bounds the events a device holds for its reader; past it new
// events are dropped and counted (AsyncEventDropped), so raising one never
// blocks the engine.
const eventDepth = 256

// Events returns the channel of the device's asynchronous events
// (ibv_get_async_event). It is never closed; after Done no more come.
func (d *Device) Events() <-chan Event { return d.events }

// DropEvent counts an event that its reader had no room for.
func (d *Device) DropEvent() { d.counters.inc(AsyncEventDropped) }

// raise queues an event without blocking.
func (d *Device) raise(e Event) {
	select {
	case d.events <- e:
	default:
		d.DropEvent()
	}
}

// qpEvents are the once-only QP events already raised. Owned by the QP's
// turn (mu held); cleared when the QP is reset.
type qpEvents struct {
	commEst bool // COMM_EST, for the first packet received in RTR
	lastWQE bool // LAST_WQE_REACHED, for a QP on an SRQ in the error state
	// sqDrain is set by an RTS → SQD modify that asked for SQ_DRAINED,
	// and cleared when the event is raised or the QP leaves SQD.
	sqDrain bool
}

// noteReceived raises COMM_EST for the first packet a QP receives in RTR
// (IBA 11.6.3.1: the peer's first message means it reached RTS even if
// this side never learned so out of band).
func (qp *QP) noteReceived() {
	if qp.State() == ib.QPStateRTR && !qp.events.commEst {
		qp.events.commEst = true
		qp.dev.raise(Event{Type: ib.EventCommEst, QP: qp})
	}
}

// enterError moves the QP to the error state after a transport error and
// raises ev for it, once: QP_FATAL for what the requester or completer met,
// QP_REQ_ERR or QP_ACCESS_ERR for an invalid or forbidden request the
// responder NAKed (IBA 11.6.3.2, doc/design.md §5). Linux rxe raises none of these; its
// users learn of the error from the completions alone.
func (qp *QP) enterError(ev ib.EventType) {
	if qp.State() != ib.QPStateErr {
		qp.state.Store(uint32(ib.QPStateErr))
		qp.dev.raise(Event{Type: ev, QP: qp})
	}
}

// linkDown raises PORT_ERR and DEVICE_FATAL when the device's link closed
// under it rather than by Close: the device can send and receive nothing
// more.
func (d *Device) linkDown() {
	select {
	case <-d.stop:
	default:
		d.raise(Event{Type: ib.EventPortErr, Port: 1})
		d.raise(Event{Type: ib.EventDeviceFatal})
	}
}

// noteDrained raises SQ_DRAINED for a QP in SQD that asked for it, once
// nothing its send queue started is outstanding (IBA 11.6.3.1 and
// 10.3.1: SQD finishes the messages in progress and starts no more).
func (qp *QP) noteDrained() {
	if qp.events.sqDrain && qp.State() == ib.QPStateSQD && qp.oldest() == nil {
		qp.events.sqDrain = false
		qp.dev.raise(Event{Type: ib.EventSQDrained, QP: qp})
	}
}
