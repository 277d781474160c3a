package engine

import "github.com/goverbs/goverbs/internal/wire"

// Duplicates while READ responses are still to send (doc/protocol.md
// §7.6). A requester that goes back N resends what the responder has
// executed, and a go-back-N that timed out resends it again: the
// responder answers each duplicate in its PSN order among the READ
// responses it still owes, so a duplicate before the first of them is
// answered at once, and one after it when the streams have passed it.
// Waiting in the inbound queue for the streams instead, a duplicate kept
// everything behind it waiting too: a READ stream paced to 1 MiB/s takes
// a quarter of a second for 256 KiB, and the requester's resends of an
// atomic whose ACK was lost, queued behind an earlier duplicate, went
// unanswered until retry_cnt ran out: five of eight RETRY_EXC_ERR
// failures of TestSoak -soak, in which the fabric had lost one to three
// of the atomic's eight tries.

// duplicate answers a request the responder has seen: SEND and WRITE are
// acknowledged again, READs re-executed, atomics answered from the
// resource cache. Unknown duplicates are dropped.
func (qp *QP) duplicate(p wire.Packet, psn wire.PSN) respOutcome {
	info := p.Info()
	r := &qp.resp
	switch {
	case info.Is(wire.OpSend), info.Is(wire.OpWrite):
		if qp.answerLater(psn) {
			if !r.dupACK || r.dupPSN.Less(psn) {
				r.dupACK, r.dupPSN = true, psn
			}
			return respDupLater
		}
		qp.ackAgain()
		return respDupACK
	case info.Is(wire.OpRead):
		reth := p.RETH()
		for i := range r.res {
			res := &r.res[i]
			if res.kind != wire.OpRead || !psn.InWindow(res.first, uint32(res.last.Diff(res.first))+1) {
				continue
			}
			// The retried READ must ask for a part of the original one.
			end := uint64(res.va) + uint64(res.length)
			if reth.RKey() != res.rkey || reth.VA() < res.va || reth.VA()+uint64(reth.DMALength()) > end {
				return respDupDrop
			}
			return qp.repeatRead(i, reth.VA(), reth.RKey(), reth.DMALength(), psn)
		}
	case info.Is(wire.OpAtomic):
		for i := range r.res {
			if res := &r.res[i]; res.kind == wire.OpAtomic && res.first == psn {
				if qp.answerLater(psn) {
					res.replay = true
					return respDupLater
				}
				qp.sendAtomicACK(psn, res.orig)
				return respDupAtomic
			}
		}
	}
	return respDupDrop
}

// streamFloor returns the PSN of the first READ response still to send,
// and whether there is one: the least of the streams', the one being sent
// and those queued, which a READ asked again may have put out of PSN order.
func (r *responder) streamFloor() (wire.PSN, bool) {
	if !r.read.active {
		return 0, false
	}
	f := r.read.psn
	for k := range r.readQ.n {
		if p := r.readQ.q[k].psn; p.Less(f) {
			f = p
		}
	}
	return f, true
}

// answerLater reports whether the answer to a duplicate of PSN psn would
// overtake READ responses still to send, and so waits for them
// (answerPassed). A SEND or WRITE after them is acknowledged then, an
// atomic answered then.
func (qp *QP) answerLater(psn wire.PSN) bool {
	f, ok := qp.resp.streamFloor()
	if ok && !psn.Less(f) {
		qp.resp.dupLater = true
		return true
	}
	return false
}

// answeredTo returns the PSN an ACK may acknowledge: the last executed,
// or the last before the first READ response still to send.
func (qp *QP) answeredTo() wire.PSN {
	if f, ok := qp.resp.streamFloor(); ok {
		return f.Sub(1)
	}
	return qp.resp.psn.Sub(1)
}

// answerPassed answers the duplicates that waited for READ responses,
// once a stream has ended: the atomics the streams have passed, in PSN
// order (the resources are taken in it), then the ACK of the SENDs and
// WRITEs they have passed.
func (qp *QP) answerPassed() {
	r := &qp.resp
	if !r.dupLater {
		return
	}
	r.dupLater = false
	for k := range len(r.res) {
		res := &r.res[(r.resNext+k)%len(r.res)]
		if !res.replay {
			continue
		}
		if qp.answerLater(res.first) {
			continue
		}
		res.replay = false
		qp.sendAtomicACK(res.first, res.orig)
	}
	if r.dupACK && !qp.answerLater(r.dupPSN) {
		r.dupACK = false
		qp.ackAgain()
	}
}

// ackAgain acknowledges duplicate SENDs and WRITEs: up to what an ACK may
// acknowledge now (answeredTo).
func (qp *QP) ackAgain() {
	qp.sendACK(wire.ACKSyndrome(wire.CreditsUnlimited), qp.answeredTo())
	qp.dev.counters.inc(ACKSent)
}
