package engine

import (
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// When to ask a READ again for what it misses, and the asking
// (doc/protocol.md §8.3): the evidence that a response is lost rather
// than late, the round trip and reorder window it is weighed by, and the
// requester's part, which sends the asks.

// noteAhead takes a response at psn of WQE x, past the first missing
// response of x or of READs before x: the stream passed their gaps, and
// what it shows may prove one lost. contiguous says the response before
// psn is in, which a response a network moved ahead of its neighbours
// lacks.
func (qp *QP) noteAhead(x *sendWQE, psn wire.PSN, contiguous bool, now instant) {
	for i := qp.sq.Head(); i != qp.req.cur && i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if w.opcode == ib.WRRDMARead && w.got.LessEq(w.lastPSN) && w.got.Less(psn) {
			if w != x {
				w.passed = true
			}
			qp.evidence(w, x, psn, contiguous, now)
		}
		if w == x {
			return
		}
	}
}

// notePassed takes an ACK or NAK for psn: every READ before it has been
// answered in full.
func (qp *QP) notePassed(psn wire.PSN, now instant) {
	for i := qp.sq.Head(); i != qp.req.cur && i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if !w.lastPSN.Less(psn) {
			return
		}
		if w.opcode == ib.WRRDMARead && w.got.LessEq(w.lastPSN) {
			w.passed = true
			qp.evidence(w, nil, psn, true, now)
		}
	}
}

// evidence weighs one response past READ w's first missing one, from the
// response at psn of WQE x (nil for an ACK). Before w is asked again it
// counts towards dupThresh and starts the reorder window; after, only
// what shows the answer's first response lost counts: the responses that
// follow it in the answer (the first dupThresh asked for), or one of a
// request sent after the ask, which the responder answers later (and
// failing both, askWait). The rest of the first stream, or of an earlier
// answer, says nothing of it.
func (qp *QP) evidence(w, x *sendWQE, psn wire.PSN, contiguous bool, now instant) {
	switch w.ask {
	case askNone:
		if w.passAt.IsZero() {
			w.passAt = now
			qp.comp.armLoss(now.Add(qp.reorderWindow()))
		}
		if contiguous {
			w.beyond++
		}
	case askSent:
		// A later request's response counts only after one already in:
		// a network that reorders moves single responses ahead (netem: a
		// whole delay), and three of those asked again in the lab an
		// answer that was merely behind rxe's queue.
		inAnswer := x == w && w.askFrom.Less(psn) && psn.LessEq(w.askTo) && psn.Diff(w.askFrom) <= dupThresh
		if inAnswer || (x != nil && x != w && int32(x.seq-w.askSeq) > 0 && contiguous) {
			w.beyond++
		}
		// An answer shorter than dupThresh shows its first response lost
		// by the rest of it.
		if inAnswer && w.beyond >= uint8(min(w.askTo.Diff(w.askFrom), dupThresh)) {
			qp.askRead(w)
			return
		}
	default:
		return
	}
	if w.beyond >= dupThresh {
		qp.askRead(w)
	}
}

// gotTo notes that READ w holds every response before psn. The evidence
// counted was for the old gap. If the new gap is behind responses that
// came earlier, or a stream that has passed, the stream is past it
// already: lost, if an answer to an ask came back past it, or once the
// reorder window since the stream passed is over.
func (qp *QP) gotTo(w *sendWQE, psn wire.PSN) {
	answered := w.ask == askSent && w.askTo.Less(psn)
	w.got, w.beyond = psn, 0
	if answered {
		w.ask = askNone
	}
	if w.lastPSN.Less(psn) || w.ask != askNone {
		return
	}
	switch {
	case !w.passed && !psn.Less(w.hi):
		w.passAt = 0 // nothing is known past the new gap
	case answered:
		qp.askRead(w)
	case !w.passAt.IsZero():
		qp.comp.armLoss(w.passAt.Add(qp.reorderWindow()))
	}
}

// askRead asks READ w again for what it misses first: from its first
// missing response to the end of that gap — the READ's end if nothing
// after it is in. A later gap is asked for once this one is filled: asking
// from the first missing response keeps the requests for one READ from
// going backwards, which a responder like rxe requires (it takes no
// request for a part before the last one asked), and one request per gap
// asks for nothing that arrived.
func (qp *QP) askRead(w *sendWQE) {
	to := w.got
	for to.Less(w.lastPSN) && !qp.placed(to.Next()) {
		to = to.Next()
	}
	w.askFrom, w.askTo, w.ask, w.beyond = w.got, to, askPending, 0
	qp.comp.asks++
}

// armLoss notes when a gap seen passed becomes a loss by the reorder
// window.
func (c *completer) armLoss(at instant) {
	if c.lossAt.IsZero() || at.Before(c.lossAt) {
		c.lossAt = at
	}
}

// checkGaps asks again for the READs whose gap has outlived the reorder
// window since the stream was seen past it, and arms the next check.
func (qp *QP) checkGaps(now instant) {
	c := &qp.comp
	if c.lossAt.IsZero() || now.Before(c.lossAt) {
		return
	}
	c.lossAt = 0
	win, wait := qp.reorderWindow(), qp.askWait()
	for i := qp.sq.Head(); i != qp.req.cur && i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		var at instant
		switch {
		case w.opcode != ib.WRRDMARead || w.lastPSN.Less(w.got):
			continue
		case w.ask == askNone && !w.passAt.IsZero():
			at = w.passAt.Add(win)
		case w.ask == askSent && w.askTo.Diff(w.askFrom) < dupThresh:
			at = w.askAt.Add(wait)
		default:
			continue
		}
		if now.Before(at) {
			c.armLoss(at)
		} else {
			qp.askRead(w)
		}
	}
}

// askWait is how long a short ask — fewer than dupThresh+1 responses, too
// few for the rest of its answer to show the first lost — may go
// unanswered before it is asked again: four smoothed round trips (a READ's
// round trip counts the responder's queue, which it answers in order, and
// an ask waits behind the READs asked before it), and at least the
// reorder window, within half the local ACK timeout. It is the
// last of three ways to see an answer lost, for when neither the answer's
// own stream nor the answers to later requests show it. A longer answer
// shows its own loss, and a slow one (a responder behind a paced stream)
// asked for again would be a loss signal to its pacer, and slow it more.
func (qp *QP) askWait() time.Duration {
	w := max(4*qp.comp.srtt, qp.reorderWindow())
	if lim, _ := ib.LocalACKTimeout(qp.attr.Timeout); lim > 0 {
		w = min(w, lim/2)
	}
	return w
}

// reorderWindow is how long a response may be overtaken before it counts
// as lost: the smoothed round trip (a network that reorders holds a packet
// back, or moves it ahead, by less than its delay), within a quarter of
// the local ACK timeout, so that asking comes first.
func (qp *QP) reorderWindow() time.Duration {
	lim, _ := ib.LocalACKTimeout(qp.attr.Timeout)
	lim /= 4
	if lim <= 0 {
		lim = time.Second
	}
	w := qp.comp.srtt
	if w == 0 {
		return lim
	}
	return min(max(w, minReorder), lim)
}

// sampleRTT measures the round trip of x's request by the first response
// of a READ or the atomic ACK (or, sampleACK, the ACK of a SEND or WRITE),
// if the request went out once, and smooths it in as TCP does (RFC 6298:
// an eighth of each sample). Not the smallest: a network that reorders
// moves some answers a whole delay ahead (netem sends them at once), and
// a window or probe time set by those fires on every other answer.
func (qp *QP) sampleRTT(x *sendWQE, psn wire.PSN, now instant) {
	if psn != x.firstPSN || x.sentAt.IsZero() {
		return
	}
	qp.comp.smooth(now.Sub(x.sentAt))
	x.sentAt = 0
}

// smooth takes a round-trip sample into srtt.
func (c *completer) smooth(d time.Duration) {
	switch {
	case d <= 0:
	case c.srtt == 0:
		c.srtt = d
	default:
		c.srtt += (d - c.srtt) / 8
	}
}

// sendAsks is the requester's part: it sends the asks the completer
// raised, each a READ request for the part of a READ it misses. They are
// duplicates of requests the responder has executed, so neither the
// window nor max_rd_atomic holds them back; they count as retries and
// take the window back as a go-back-N does.
func (qp *QP) sendAsks(now instant) {
	if qp.req.asks == qp.comp.asks {
		return
	}
	qp.req.asks = qp.comp.asks
	for i := qp.sq.Head(); i != qp.req.cur && i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if w.ask != askPending {
			continue
		}
		off := uint32(w.askFrom.Diff(w.firstPSN)) * qp.mtu
		end := min((uint32(w.askTo.Diff(w.firstPSN))+1)*qp.mtu, w.length)
		f := qp.bth(wire.RCReadRequest, w.askFrom)
		f.AckRequest = true
		p := qp.xmit.start(qp, &f, 0)
		p.RETH().Encode(&wire.RETHFields{VA: w.remoteAddr + uint64(off), RKey: uint32(w.rkey), DMALength: end - off})
		qp.xmit.queue(qp, p)
		qp.req.seq++
		// Karn: a response may now answer either request, so it measures
		// no round trip.
		w.ask, w.askAt, w.askSeq, w.sentAt = askSent, now, qp.req.seq, 0
		qp.dev.counters.inc(RetransmittedPkts)
		qp.dev.counters.inc(CompleterRetryErr)
		qp.req.win.loss(w.askFrom, qp.req.maxPSN)
		qp.req.clean = 0
		qp.comp.armLoss(now.Add(qp.askWait()))
	}
	qp.comp.startTimer(now, &qp.attr)
}
