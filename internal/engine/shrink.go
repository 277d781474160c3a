package engine

import "time"

// A QP's inbound ring and transmit batch grow for bursts (Device.enqueue,
// xmitBatch.start) and each goes back to its starting size once it has
// been quiet for shrinkQuiet: the ring when for that long no turn found
// more packets queued than a new QP's ring holds and it did not grow, the
// batch when no flush sent more packets than a new QP's batch holds. A
// burst left up to half a MiB behind otherwise (a full ring's 4096 slots
// of 112 bytes, and the batch), in every QP that ever took one. A shorter
// wait would have a stream's ring and batch grow again after every pause,
// allocating on its hot path.
var shrinkQuiet = time.Second // a variable so that tests can shorten it

// noteInbound records, at a turn's start, a ring holding more than a new
// QP's would. Called with mu held.
func (qp *QP) noteInbound(now instant) {
	if qp.inbound.Len() > inboundStart {
		qp.inWideAt = now
	}
}

// shrinkAt returns when the QP's grown ring or batch may shrink, or zero
// if neither has grown. Called with mu held, which the ring's producer
// takes to grow it.
func (qp *QP) shrinkAt() instant { return sooner(qp.ringShrinkAt(), qp.xmit.shrinkAt()) }

// ringShrinkAt is shrinkAt for the inbound ring alone.
func (qp *QP) ringShrinkAt() instant {
	if qp.inbound.Cap() <= inboundStart {
		return 0
	}
	return qp.inWideAt.Add(shrinkQuiet)
}

// shrinkAt is QP.shrinkAt for the batch alone.
func (x *xmitBatch) shrinkAt() instant {
	if len(x.msgs) <= xmitStart {
		return 0
	}
	return x.wideAt.Add(shrinkQuiet)
}

// shrink gives a quiet QP's grown ring or batch back its starting size,
// at the end of a turn (mu held, the batch flushed). The ring's one
// producer holds the device's receive gate while it queues (recvLoop,
// recvCoalesced, Progress) and takes mu only to grow the ring, after the
// gate: the gate is taken here without waiting. What stays grown — the
// gate was held, the ring holds more than its start — waits for another
// quiet period, so that the QP's timer does not fire again at once.
func (qp *QP) shrink(now instant) {
	x := &qp.xmit
	if x.peak > xmitStart {
		x.wideAt = now
	}
	x.peak = 0
	if at := x.shrinkAt(); !at.IsZero() && !now.Before(at) {
		x.wideAt = now
		if x.n == 0 {
			x.resize(min(xmitStart, x.max))
		}
	}
	if at := qp.ringShrinkAt(); !at.IsZero() && !now.Before(at) {
		qp.inWideAt = now
		if qp.dev.rxGate.TryLock() {
			qp.inbound.Shrink(inboundStart) // keeping what it holds
			qp.dev.rxGate.Unlock()
		}
	}
}
