package engine

import (
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// A loss at the end of a flight — the last packets of a message, or the
// ACK of the last message — shows in nothing that follows, and waits for
// the requester's local ACK timeout: 67 ms at the usual timeout 14, where
// the round trip is a millisecond (doc/protocol.md §8.6). Two shortcuts,
// both after a probe time of a few round trips:
//
//   - the requester's tail probe: when nothing has been acknowledged for
//     a probe time after it last sent, it sends the last packet again,
//     asking for an ACK. A responder that has it answers the duplicate
//     with an ACK of what it holds (doc/protocol.md §7.6); one that missed
//     packets before it sees a gap and NAKs it. It spends no retry, and
//     waits for a round trip measured;
//   - the responder's stall NAK: when packets it holds past a gap, none of
//     which asked for an ACK (doc/protocol.md §6.3), sit a probe time with
//     nothing more arriving, it sends the sequence NAK it held back, and
//     the requester goes back to the gap. A gap whose NAK is out and that
//     nothing has filled a probe time after the last arrival gets its NAK
//     again: the first one may have been lost, and the requester (rxe as
//     goverbs) takes a NAK it has acted on as nothing new. A message under way without a
//     gap gets one too, if requests came out of sequence within
//     lossMemory: its last packets were likely lost. On a path that loses
//     nothing it gets none, as a peer that pauses mid-message (rxe in a VM
//     does, for milliseconds) would count a sequence error it never
//     caused. Duplicates are no sign of loss: rxe sends them without any,
//     as its retransmission timer, armed when idle, fires during a later
//     message (about fifteen times a second in ibv_rc_pingpong).
const (
	// probeRTTs is the probe time in smoothed round trips: a request,
	// its answer, and as much again for one that comes late (TCP's tail
	// loss probe waits as long).
	probeRTTs = 2
	// minProbe bounds the probe time below.
	minProbe = 200 * time.Microsecond
	// lossMemory is how long a request out of sequence marks the path
	// as one that loses packets.
	lossMemory = time.Second
	// noTimerStall is the stall NAK's probe time on a QP without a local
	// ACK timer before it measured a round trip: an eighth of the usual
	// timeout, 14 (67 ms), as with it.
	noTimerStall = 8 * time.Millisecond
)

// probeTime is how long a flight may stall before a probe: probeRTTs of
// the smoothed round trip — an eighth of the local ACK timeout before one
// is measured, as on a responder whose QP sends nothing and NAKed nothing
// yet — at least minProbe and at most half the local ACK timeout; 0, none,
// without the timer (timeout 0).
func (qp *QP) probeTime() time.Duration {
	lim, _ := ib.LocalACKTimeout(qp.attr.Timeout)
	if lim <= 0 {
		return 0
	}
	t := lim / 8
	if qp.comp.srtt > 0 {
		t = probeRTTs * qp.comp.srtt
	}
	return min(max(t, minProbe), lim/2)
}

// armProbe pushes the tail probe out after a send or an acknowledgement,
// or disarms it when nothing is outstanding. A requester probes only once
// it has measured a round trip: its first ACK gives one.
func (qp *QP) armProbe(now instant) {
	c := &qp.comp
	c.probeAt = 0
	if t := qp.probeTime(); t > 0 && c.srtt > 0 && c.psn != qp.req.maxPSN {
		c.probeAt = now.Add(t)
	}
}

// checkProbe raises the tail probe once its time passed with nothing
// acknowledged: once per flight (the highest PSN sent), for a flight that
// ends with a SEND or WRITE packet (the window may have stopped it inside
// a message), and not during a go-back-N or an RNR wait.
func (qp *QP) checkProbe(now instant) {
	c := &qp.comp
	if c.probeAt.IsZero() || now.Before(c.probeAt) {
		return
	}
	c.probeAt = 0
	if c.psn == qp.req.maxPSN || qp.resendPending() || now.Before(c.rnrUntil) || (c.probed && c.probedTo == qp.req.maxPSN) {
		return
	}
	if w := qp.wqeAt(qp.req.maxPSN.Sub(1)); w != nil && !w.isReadAtomic() && w.state != wqeFailed {
		c.probes++
		c.probed, c.probedTo = true, qp.req.maxPSN
	}
}

// sendProbe is the requester's part: it sends the last packet of the
// flight again, asking for an ACK.
func (qp *QP) sendProbe() {
	if qp.req.probes == qp.comp.probes {
		return
	}
	qp.req.probes = qp.comp.probes
	psn := qp.req.maxPSN.Sub(1)
	w := qp.wqeAt(psn)
	if w == nil || w.isReadAtomic() || w.state == wqeFailed {
		return
	}
	sent, next, noAck, st := w.sent, qp.req.psn, qp.req.noAck, w.state
	w.sent, qp.req.noAck = uint32(psn.Diff(w.firstPSN))*qp.mtu, ackEvery
	f := qp.bth(0, psn)
	ok := qp.sendSegment(w, &f)
	w.sent, qp.req.psn, qp.req.noAck = sent, next, noAck
	if ok {
		// Karn: the ACK may answer the first sending or the probe, so it
		// measures no round trip.
		w.state, w.sentAt = st, 0
		qp.dev.counters.inc(RetransmittedPkts)
	}
}

// sampleACK measures a round trip by an ACK of the last PSN of a SEND or
// WRITE sent once.
func (qp *QP) sampleACK(psn wire.PSN, now instant) {
	for i := qp.sq.Head(); i != qp.req.cur && i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if psn.Less(w.lastPSN) {
			return
		}
		if w.lastPSN == psn && !w.isReadAtomic() {
			qp.sampleRTT(w, w.firstPSN, now)
			return
		}
	}
}

// armStall arms the responder's stall NAK after requests arrived: while
// packets are held past a gap, or a message is under way on a path that
// loses packets, and no NAK is out, it is due a probe time after the last
// arrival.
func (qp *QP) armStall(now instant) {
	r := &qp.resp
	if r.lost {
		r.lost, r.lostAt = false, now
	}
	r.stallAt = 0
	if qp.stalled(now) {
		r.stallAt = now.Add(qp.stallTime())
	}
}

// stallTime is how long the stall NAK waits: the probe time, or on a QP
// without a local ACK timer — timeout 0, or one that only responds, in
// RTR — probeRTTs smoothed round trips (a NAK's, which a responder
// measures), at least minProbe, or noTimerStall before one is measured.
// The timer is the requester's: the responder owes the NAK all the same,
// as a held READ or atomic draws none when it comes (§6.3), and without
// it the peer waited for its own timer, or for ever if it has none.
func (qp *QP) stallTime() time.Duration {
	if t := qp.probeTime(); t > 0 {
		return t
	}
	if s := qp.comp.srtt; s > 0 {
		return max(probeRTTs*s, minProbe)
	}
	return noTimerStall
}

// stalled reports whether the responder is owed packets it has reason to
// think lost: past a gap (a NAK for it may be out), or the rest of a
// message on a lossy path.
func (qp *QP) stalled(now instant) bool {
	r := &qp.resp
	lossy := !r.lostAt.IsZero() && now.Sub(r.lostAt) < lossMemory
	// A held request at the expected PSN waits for a READ stream, not for
	// the requester.
	gap := r.stash.n > 0 && r.stash.peek(r.psn) == nil
	return r.sentNAK || gap || (lossy && (r.inSend || r.inWrite))
}

// checkStall sends the stall NAK when its time has passed.
func (qp *QP) checkStall(now instant) {
	r := &qp.resp
	if r.stallAt.IsZero() || now.Before(r.stallAt) {
		return
	}
	r.stallAt = 0
	if !qp.stalled(now) {
		return
	}
	r.sentNAK, r.nakAt = true, now
	qp.sendACK(wire.NAKSyndrome(wire.NAKPSNSequenceError), r.psn)
	qp.dev.counters.inc(NAKSent)
}
