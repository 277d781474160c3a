package engine

import (
	"encoding/binary"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// completer matches responses to send WQEs, completes them in order and
// drives retransmission (IBA 9.7.6, doc/protocol.md §8). Owned by the QP's turn.
//
// It writes only its own fields and the WQEs it completes. What the
// requester must do next it reports in fields the requester reads: resends
// (go back to psn), rnrUntil (send nothing before it) and rdAtomicDone (READ
// and atomic credits returned); the requester acts on them at its next
// turn. The one field both write is deadline: the requester arms the timer
// when it sends, the completer pushes it out or clears it.
type completer struct {
	psn      wire.PSN // next response PSN expected
	retryCnt uint8    // retries left after timeouts and sequence NAKs
	rnrRetry uint8    // retries left after RNR NAKs
	deadline instant  // local ACK timeout; zero when nothing is outstanding
	// retrying is set while a go-back-N started by a NAK or a lost
	// response is under way: the duplicates it provokes must not start
	// another one (rxe: started_retry). Progress or a timeout ends it.
	retrying bool
	// resends counts the go-back-N retransmissions asked of the requester;
	// it rewinds to psn when it has made fewer (requester.resends).
	resends      uint32
	rnrUntil     instant // after an RNR NAK, nothing is sent before this
	rdAtomicDone uint32  // READ and atomic WQEs completed (see requester.rdAtomicStarted)
	// READ recovery (completer_read.go): the responses placed past psn,
	// one past the highest PSN a response acknowledged, the asks raised
	// for the requester (sendWQE.ask), when a gap next outlives the
	// reorder window, and the smoothed round trip.
	board   board
	ackNext wire.PSN
	asks    uint32
	lossAt  instant
	srtt    time.Duration
	// resendFrom, when resendSet, is where the next go-back-N starts
	// instead of psn (seqNAKPastRead): the requests before it arrived.
	// A flag, not a PSN compared with psn: a value left from long ago
	// (or the zero of a new connection) lies "between" psn and maxPSN
	// again once the PSNs come round.
	resendFrom wire.PSN
	resendSet  bool
	// The tail probe (probe.go): when it is due, the probes raised for
	// the requester, and the flight last probed.
	probeAt  instant
	probes   uint32
	probed   bool
	probedTo wire.PSN
}

// reload restores the retry counters, after progress (IBA 9.7.5.2.8).
func (c *completer) reload(a *QPAttr) { c.retryCnt, c.rnrRetry = a.RetryCnt, a.RNRRetry }

// startTimer arms the local ACK timeout if it is not running.
func (c *completer) startTimer(now instant, a *QPAttr) {
	if c.deadline.IsZero() {
		c.restartTimer(now, a)
	}
}

// restartTimer pushes the local ACK timeout one period out (IBA 9.7.6.1.3);
// timeout 0 disables it.
func (c *completer) restartTimer(now instant, a *QPAttr) {
	if d, _ := ib.LocalACKTimeout(a.Timeout); d > 0 {
		c.deadline = now.Add(d)
	}
}

// resend asks the requester to go back to comp.psn (go-back-N).
func (qp *QP) resend() { qp.comp.resends++ }

// oldest returns the oldest send WQE that has started, or nil.
func (qp *QP) oldest() *sendWQE {
	if qp.sq.Len() == 0 {
		return nil
	}
	w := qp.sq.Peek()
	if w.state == wqePosted {
		return nil
	}
	return w
}

// compPhase is a step of the completer's handling of one response, in the
// order of the requester's response checks (IBA 9.7.6.1), as rxe takes them:
// check the PSN, then the kind of response, place READ or atomic data,
// then complete, retry or fail, and update the timers.
type compPhase uint8

const (
	compCheckPSN     compPhase = iota // drop duplicates and strays; earlier WQEs are implicitly acknowledged
	compCheckACK                      // classify: ACK, NAK by code, RNR NAK, READ response, atomic ACK
	compACK                           // cumulative ACK of SENDs and WRITEs
	compReadData                      // place READ response data
	compAtomicData                    // place an atomic's original value
	compSeqNAK                        // PSN sequence error NAK: go back to the PSN the responder expects
	compRNRNAK                        // RNR NAK: wait the responder's timer, then resend
	compLostResponse                  // past a READ or atomic still waiting for its own response
	compAhead                         // a READ response or atomic ACK past comp.psn: placed now
	compRetry                         // start a go-back-N retransmission
	compFail                          // complete the WQE in error; the QP goes to the error state
	compMismatch                      // matches no outstanding request: dropped and counted
	compUpdate                        // restart the timer, reload the retry counters, finish
	compDuplicate                     // terminal: an already completed PSN, dropped and counted
	compStray                         // terminal: for nothing ever sent, dropped and counted
)

var compPhaseNames = [...]string{
	compCheckPSN:     "check PSN",
	compCheckACK:     "check ACK",
	compACK:          "ACK",
	compReadData:     "read data",
	compAtomicData:   "atomic data",
	compSeqNAK:       "PSN sequence NAK",
	compRNRNAK:       "RNR NAK",
	compLostResponse: "past a READ or atomic",
	compAhead:        "placed ahead",
	compRetry:        "retry",
	compFail:         "fail",
	compMismatch:     "mismatch",
	compUpdate:       "update",
	compDuplicate:    "duplicate",
	compStray:        "stray",
}

func (s compPhase) String() string { return compPhaseNames[s] }

// compCtx carries one response through the phases.
type compCtx struct {
	p   wire.Packet
	psn wire.PSN
	now instant
	w   *sendWQE  // oldest WQE the response has not implicitly acknowledged
	nak bool      // an RNR NAK, a NAK or a reserved syndrome: no counter reload
	err compError // for compFail
	// At arrival: progress is judged against them.
	before      wire.PSN
	wasRetrying bool
}

// complete handles one response packet: a driver loop over the phases.
func (qp *QP) complete(p wire.Packet, now instant) {
	c := compCtx{p: p, psn: p.BTH().PSN(), now: now, before: qp.comp.psn, wasRetrying: qp.comp.retrying}
	for ph := compCheckPSN; ; {
		if qp.trace != nil {
			qp.traceComp(&c, ph)
		}
		switch ph {
		case compCheckPSN:
			ph = qp.compCheckPSN(&c)
		case compCheckACK:
			ph = qp.compCheckACK(&c)
		case compACK:
			ph = qp.compACK(&c)
		case compReadData:
			ph = qp.compReadData(&c)
		case compAtomicData:
			ph = qp.compAtomicData(&c)
		case compSeqNAK:
			ph = qp.compSeqNAK(&c)
		case compRNRNAK:
			ph = qp.compRNRNAK(&c)
		case compLostResponse:
			ph = qp.compPast(&c)
		case compAhead:
			ph = qp.compAhead(&c)
		case compRetry:
			ph = compUpdate
			if c.err = qp.retry(now, false); c.err != compOK {
				c.w, ph = qp.oldest(), compFail
			}
		case compFail:
			qp.fail(c.w, c.err)
			ph = compUpdate
		case compMismatch:
			qp.dev.counters.inc(DropUnexpectedResponse)
			ph = compUpdate
		case compUpdate:
			qp.compUpdate(&c)
			return
		case compDuplicate:
			qp.dev.counters.inc(DropDuplicateResponse)
			if qp.oldest() != nil && p.Info().Is(wire.OpRead) {
				// A READ asked for again twice is served twice, the older
				// stream first, and what was asked after it only then:
				// its responses are duplicates by now, but the responder
				// is alive and working through what was asked, so they
				// keep the timer off as those placed ahead do, also for the
				// WQEs behind the READ, which it answers after them.
				qp.comp.restartTimer(now, &qp.attr)
			}
			return
		case compStray:
			qp.dev.counters.inc(DropUnexpectedResponse)
			return
		}
	}
}

// compCheckPSN drops responses for PSNs already completed or never sent.
// Every other response acknowledges the requests before its PSN (IBA
// 9.7.5.1.2, coalesced acknowledgements). A READ or atomic is completed
// only by its own response: a response after it means that one was lost
// (rxe check_psn), whatever the packet says.
func (qp *QP) compCheckPSN(c *compCtx) compPhase {
	if c.psn.Less(qp.comp.psn) {
		return compDuplicate
	}
	if !c.psn.Less(qp.req.maxPSN) || qp.oldest() == nil {
		return compStray
	}
	qp.comp.acked(c.psn)
	c.w = qp.completeThrough(c.psn.Sub(1))
	if w := c.w; w != nil && w.isReadAtomic() && w.lastPSN.Less(c.psn) {
		return compLostResponse
	}
	return compCheckACK
}

// compCheckACK sorts the response by opcode and AETH syndrome (IBA
// 9.7.5.1.1, table 43) and counts the NAKs.
func (qp *QP) compCheckACK(c *compCtx) compPhase {
	switch c.p.Opcode() {
	case wire.RCAcknowledge:
	case wire.RCAtomicAcknowledge:
		return compAtomicData
	default:
		return compReadData
	}
	syn := c.p.AETH().Syndrome()
	c.nak = syn.Type() != wire.SyndromeACK
	switch syn.Type() {
	case wire.SyndromeACK:
		return compACK
	case wire.SyndromeRNRNAK:
		qp.dev.counters.inc(RcvdRNRErr)
		return compRNRNAK
	case wire.SyndromeNAK:
		qp.dev.counters.inc(NAKRcvd)
		if syn.NAKCode() == wire.NAKPSNSequenceError {
			qp.dev.counters.inc(RcvdSeqErr)
			return compSeqNAK
		}
		if c.w == nil {
			return compUpdate
		}
		c.err = nakError(syn.NAKCode())
		return compFail
	}
	return compMismatch // reserved syndrome type
}

// compACK completes the SENDs and WRITEs an ACK covers: it is cumulative up
// to its PSN (IBA 9.7.5.1.2).
func (qp *QP) compACK(c *compCtx) compPhase {
	qp.sampleACK(c.psn, c.now)
	qp.comp.acked(c.psn.Next())
	w := qp.completeThrough(c.psn)
	if w != nil && w.isReadAtomic() && !c.psn.Less(w.firstPSN) {
		// Only its response completes a READ or atomic, never an ACK. If
		// it has been sent, the responder went past it and its response
		// was lost; if it is being sent again, the ACK is a late duplicate.
		c.w = w
		return compLostResponse
	}
	if qp.comp.psn.LessEq(c.psn) {
		qp.comp.psn = c.psn.Next()
	}
	return compUpdate
}

// compReadData places READ response data and completes the READ at its
// last packet. One past a missing response is placed by compAhead.
func (qp *QP) compReadData(c *compCtx) compPhase {
	w := c.w
	if w != nil && w.opcode == ib.WRRDMARead && qp.comp.psn.Less(c.psn) && c.psn.LessEq(w.lastPSN) {
		return compAhead
	}
	if c.psn != qp.comp.psn || w == nil || w.opcode != ib.WRRDMARead || c.psn.Less(w.firstPSN) || w.lastPSN.Less(c.psn) {
		return compMismatch
	}
	if a := c.p.AETH(); a != nil && a.Syndrome().Type() != wire.SyndromeACK {
		return compMismatch
	}
	off := uint32(c.psn.Diff(w.firstPSN)) * qp.mtu
	last := c.psn == w.lastPSN
	want := qp.mtu
	if last {
		want = w.length - off
	}
	data := c.p.Payload()
	if uint32(len(data)) != want {
		c.err = compBadResponse
		return compFail
	}
	if f := qp.copySGEs(w.sge, off, data, true); f != mem.FaultNone {
		c.err = compLocalProt
		return compFail
	}
	qp.sampleRTT(w, c.psn, c.now)
	qp.comp.psn = c.psn.Next()
	if last {
		qp.finishSend(w, ib.WCSuccess)
	} else {
		if !qp.comp.psn.Less(w.hi) {
			w.hi = qp.comp.psn
		}
		qp.gotTo(w, qp.comp.psn)
	}
	qp.advanceBehind()
	return compUpdate
}

// retryLost asks again for a response the responder went past, if the
// request was sent and is not already being sent again. The response that
// shows it restarts the timer, without reloading the retry counter: the
// responder is alive and streams on, and answers what was asked again
// only after that. During a go-back-N it does not: the go-back-N started
// the timer for its resend, and responses past a lost one can keep
// coming for ever — the answers to READs asked again, which a READ asks
// every few round trips — so pushing the timer for each kept the resend
// of a lost atomic ACK from ever being retried (TestSoak -soak stopped
// making progress so, both QPs in RTS: TestPastResponsesDuringRetry).
func (qp *QP) retryLost(c *compCtx) compPhase {
	if !qp.comp.retrying {
		qp.comp.restartTimer(c.now, &qp.attr)
	}
	if c.w.state == wqeSent && !qp.resendPending() {
		return compRetry
	}
	return compUpdate
}

// compAtomicData returns the original value of an atomic to the
// requester's buffer, in host byte order (doc/protocol.md §9).
func (qp *QP) compAtomicData(c *compCtx) compPhase {
	w := c.w
	if w == nil || !w.isAtomic() || w.firstPSN != c.psn || c.psn != qp.comp.psn {
		return compMismatch
	}
	var orig [8]byte
	binary.NativeEndian.PutUint64(orig[:], c.p.AtomicAckETH().OrigData())
	if f := qp.copySGEs(w.sge, 0, orig[:], true); f != mem.FaultNone {
		c.err = compLocalProt
		return compFail
	}
	qp.sampleRTT(w, c.psn, c.now)
	qp.comp.psn = c.psn.Next()
	qp.finishSend(w, ib.WCSuccess)
	qp.advanceBehind()
	return compUpdate
}

// compUpdate ends the handling of a response. A WQE that failed locally is
// reported once it is the oldest (doc/protocol.md §10.1), also when a READ or
// atomic before it just ended. Progress restarts the timer and, unless a
// NAK made it, reloads the retry counters (as rxe does).
func (qp *QP) compUpdate(c *compCtx) {
	if qp.State() == ib.QPStateErr {
		return
	}
	if w := qp.oldest(); w != nil && w.state == wqeFailed {
		qp.failSend(w, w.status)
		return
	}
	if qp.comp.psn != c.before {
		if !c.nak {
			qp.comp.reload(&qp.attr)
		}
		qp.comp.restartTimer(c.now, &qp.attr)
		qp.armProbe(c.now)
		if !qp.comp.retrying || c.wasRetrying {
			qp.comp.retrying = false // progress ends a retry, but not the one just started
		}
		if qp.nextPSN().Less(qp.comp.psn) {
			// Late responses acknowledged what a go-back-N was about to
			// send again: resume after them, without counting a retry.
			qp.resend()
		}
	}
	if qp.comp.psn == qp.req.maxPSN {
		qp.comp.deadline = 0
	}
}

// completeThrough completes, in order, the SEND and WRITE WQEs whose every
// packet is acknowledged by psn, moving comp.psn past them: any response
// acknowledges the requests before it (IBA 9.7.5.1.2). It returns the first
// WQE it cannot complete, or nil. A WQE that failed locally is completed
// with its error.
func (qp *QP) completeThrough(psn wire.PSN) *sendWQE {
	for w := qp.oldest(); w != nil; w = qp.oldest() {
		switch {
		case w.state == wqeFailed:
			qp.failSend(w, w.status)
			return nil
		case w.isReadAtomic() || psn.Less(w.lastPSN) || !w.lastPSN.Less(qp.req.maxPSN):
			// Not acknowledged, or its last packet was never sent. A
			// WQE a go-back-N is sending again completes all the same.
			return w
		}
		if qp.comp.psn.LessEq(w.lastPSN) {
			qp.comp.psn = w.lastPSN.Next()
		}
		// A response past a whole WQE reloads the retry counters, a
		// sequence NAK too (rxe check_psn): else the NAKs of a long lossy
		// run would spend them across WQEs that all completed.
		qp.comp.reload(&qp.attr)
		qp.finishSend(w, ib.WCSuccess)
	}
	return nil
}

// finishSend completes the oldest send WQE: its slot is freed first, then
// a completion is written if it failed or was signaled, so a poster that
// sees the completion also finds the slot free.
func (qp *QP) finishSend(w *sendWQE, status ib.WCStatus) {
	wc := WC{WRID: w.wrID, Status: status, Opcode: wcOpcodes[w.opcode], QPNum: ib.QPN(qp.qpn)}
	report := status != ib.WCSuccess || w.signaled
	if status == ib.WCSuccess {
		wc.ByteLen = w.length
		if w.isSend() {
			qp.dev.counters.inc(RDMASends)
		}
	}
	if w.isReadAtomic() {
		qp.comp.rdAtomicDone++
	}
	qp.sq.Pop()
	if report {
		qp.sendCQ.push(&wc)
	}
}
