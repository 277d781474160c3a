package engine

import (
	"encoding/binary"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// completer matches responses to send WQEs, completes them in order and
// drives retransmission. Owned by the QP's turn.
type completer struct {
	psn      wire.PSN  // next response PSN expected
	retryCnt uint8     // retries left after timeouts and sequence NAKs
	rnrRetry uint8     // retries left after RNR NAKs
	deadline time.Time // local ACK timeout; zero when nothing is outstanding
	// retrying is set while a go-back-N started by a NAK or a lost
	// response is under way: the duplicates it provokes must not start
	// another one (rxe: started_retry). Progress or a timeout ends it.
	retrying bool
}

// reload restores the retry counters, after progress (IBA 9.7.5.2.8).
func (c *completer) reload(a *QPAttr) { c.retryCnt, c.rnrRetry = a.RetryCnt, a.RNRRetry }

// startTimer arms the local ACK timeout if it is not running.
func (c *completer) startTimer(now time.Time, a *QPAttr) {
	if c.deadline.IsZero() {
		c.restartTimer(now, a)
	}
}

// restartTimer pushes the local ACK timeout one period out; timeout 0
// disables it.
func (c *completer) restartTimer(now time.Time, a *QPAttr) {
	if d, _ := ib.LocalACKTimeout(a.Timeout); d > 0 {
		c.deadline = now.Add(d)
	}
}

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

// complete handles one response packet (doc/protocol.md §7.5, rxe_comp.c).
func (qp *QP) complete(p wire.Packet, now time.Time) {
	psn := p.BTH().PSN()
	if psn.Less(qp.comp.psn) {
		qp.dev.counters.inc(DropDuplicateResponse)
		return
	}
	if !psn.Less(qp.req.maxPSN) || qp.oldest() == nil {
		qp.dev.counters.inc(DropUnexpectedResponse) // for nothing ever sent
		return
	}
	before, wasRetrying := qp.comp.psn, qp.comp.retrying
	isNAK := false
	// Every response acknowledges the requests before its PSN. A READ or
	// atomic is completed only by its own response: a response after it
	// means that one was lost (rxe check_psn), whatever the packet says.
	if w := qp.completeThrough(psn.Sub(1)); w != nil && w.isReadAtomic() && w.lastPSN.Less(psn) {
		if w.state == wqeSent {
			qp.retry(now, false)
		}
	} else {
		switch op := p.Opcode(); {
		case op == wire.RCAcknowledge:
			syn := p.AETH().Syndrome()
			isNAK = syn.Type() != wire.SyndromeACK
			switch syn.Type() {
			case wire.SyndromeACK:
				qp.ack(psn, now)
			case wire.SyndromeRNRNAK:
				qp.rnrNAK(psn, syn.RNRTimer(), now)
			case wire.SyndromeNAK:
				qp.dev.counters.inc(NAKRcvd)
				if syn.NAKCode() == wire.NAKPSNSequenceError {
					qp.seqNAK(psn, now)
				} else {
					qp.fatalNAK(psn, syn.NAKCode())
				}
			default:
				qp.dev.counters.inc(DropUnexpectedResponse)
			}
		case op == wire.RCAtomicAcknowledge:
			qp.atomicACK(p, psn)
		default: // READ responses
			qp.readResponse(p, psn)
		}
	}
	if qp.State() == ib.QPStateErr {
		return
	}
	// A WQE that failed locally is reported once it is the oldest
	// (doc/protocol.md §10.1), also when a READ or atomic before it just ended.
	if w := qp.oldest(); w != nil && w.state == wqeFailed {
		qp.failSend(w, w.status)
		return
	}
	if qp.comp.psn != before {
		if !isNAK {
			qp.comp.reload(&qp.attr) // rxe reloads the counters on ACKs only
		}
		qp.comp.restartTimer(now, &qp.attr)
		if !qp.comp.retrying || wasRetrying {
			qp.comp.retrying = false // progress ends a retry, but not the one just started
		}
		if qp.req.psn.Less(qp.comp.psn) {
			// Late responses acknowledged what a go-back-N was about to
			// send again: resume after them, without counting a retry.
			qp.rewind()
		}
	}
	if qp.comp.psn == qp.req.maxPSN {
		qp.comp.deadline = time.Time{}
	}
}

// completeThrough completes, in order, the SEND and WRITE WQEs whose every
// packet is acknowledged by psn, moving comp.psn past them: any response
// acknowledges the requests before it (doc/protocol.md §7.4, §7.5). It returns
// the first WQE it cannot complete, or nil. A WQE that failed locally is
// completed with its error.
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
		qp.finishSend(w, ib.WCSuccess)
	}
	return nil
}

// ack handles an ACK: cumulative up to psn.
func (qp *QP) ack(psn wire.PSN, now time.Time) {
	w := qp.completeThrough(psn)
	if w != nil && w.isReadAtomic() && !psn.Less(w.firstPSN) {
		// Only its response completes a READ or atomic, never an ACK. If
		// it has been sent, the responder went past it and its response
		// was lost (doc/protocol.md §7.5); if it is being sent again, the ACK
		// is a late duplicate.
		if w.state == wqeSent {
			qp.retry(now, false)
		}
		return
	}
	if qp.comp.psn.LessEq(psn) {
		qp.comp.psn = psn.Next()
	}
}

// readResponse places READ response data and completes the READ at its
// last packet.
func (qp *QP) readResponse(p wire.Packet, psn wire.PSN) {
	w := qp.completeThrough(psn.Sub(1))
	if psn != qp.comp.psn {
		qp.dev.counters.inc(DropUnexpectedResponse) // one went missing: the timeout retries
		return
	}
	if w == nil || w.opcode != ib.WRRDMARead || psn.Less(w.firstPSN) || w.lastPSN.Less(psn) {
		qp.dev.counters.inc(DropUnexpectedResponse)
		return
	}
	if a := p.AETH(); a != nil && a.Syndrome().Type() != wire.SyndromeACK {
		qp.dev.counters.inc(DropUnexpectedResponse)
		return
	}
	off := uint32(psn.Diff(w.firstPSN)) * qp.mtu
	last := psn == w.lastPSN
	want := qp.mtu
	if last {
		want = w.length - off
	}
	data := p.Payload()
	if uint32(len(data)) != want {
		qp.failSend(w, ib.WCBadRespErr)
		return
	}
	if f := qp.copySGEs(w.sge, off, data, true); f != mem.FaultNone {
		qp.failSend(w, ib.WCLocProtErr)
		return
	}
	qp.comp.psn = psn.Next()
	if last {
		qp.finishSend(w, ib.WCSuccess)
	}
}

// atomicACK returns the original value of an atomic to the requester's
// buffer, in host byte order (doc/protocol.md §9).
func (qp *QP) atomicACK(p wire.Packet, psn wire.PSN) {
	w := qp.completeThrough(psn.Sub(1))
	if w == nil || !w.isAtomic() || w.firstPSN != psn || psn != qp.comp.psn {
		qp.dev.counters.inc(DropUnexpectedResponse)
		return
	}
	var orig [8]byte
	binary.NativeEndian.PutUint64(orig[:], p.AtomicAckETH().OrigData())
	if f := qp.copySGEs(w.sge, 0, orig[:], true); f != mem.FaultNone {
		qp.failSend(w, ib.WCLocProtErr)
		return
	}
	qp.comp.psn = psn.Next()
	qp.finishSend(w, ib.WCSuccess)
}

// rnrNAK waits the responder's RNR timer, then resends from psn.
func (qp *QP) rnrNAK(psn wire.PSN, t wire.RNRTimer, now time.Time) {
	qp.dev.counters.inc(RcvdRNRErr)
	w := qp.completeThrough(psn.Sub(1))
	if w == nil {
		return
	}
	if qp.attr.RNRRetry != 7 { // 7 means retry forever
		if qp.comp.rnrRetry == 0 {
			qp.dev.counters.inc(RetryRNRExceededErr)
			qp.failSend(w, ib.WCRNRRetryExcErr)
			return
		}
		qp.comp.rnrRetry--
	}
	qp.comp.psn = psn
	qp.req.rnrUntil = now.Add(t.Duration())
	qp.rewind()
}

// seqNAK resends from the PSN the responder expects. A NAK for the PSN the
// requester has already rewound to (after an RNR NAK, or a NAK that was
// sent twice) starts no second retry (doc/protocol.md §8.2).
func (qp *QP) seqNAK(psn wire.PSN, now time.Time) {
	qp.dev.counters.inc(RcvdSeqErr)
	if qp.completeThrough(psn.Sub(1)) == nil || qp.req.psn == psn {
		return
	}
	qp.comp.psn = psn
	qp.retry(now, false)
}

// fatalNAK fails the WQE the NAK names; the QP goes to the error state.
func (qp *QP) fatalNAK(psn wire.PSN, code wire.NAKCode) {
	w := qp.completeThrough(psn.Sub(1))
	if w == nil {
		return
	}
	status := ib.WCRemOpErr // also for unknown codes, as rxe does
	switch code {
	case wire.NAKInvalidRequest:
		status = ib.WCRemInvReqErr
	case wire.NAKRemoteAccess:
		status = ib.WCRemAccessErr
	}
	qp.failSend(w, status)
}

// checkTimers fires the local ACK timeout. While an RNR wait is pending the
// timeout does not start a retry (doc/protocol.md §8.3): it is dropped, and the
// resend after the wait starts the timer again.
func (qp *QP) checkTimers(now time.Time) {
	d := qp.comp.deadline
	if d.IsZero() || now.Before(d) {
		return
	}
	qp.comp.deadline = time.Time{}
	if !qp.req.rnrUntil.IsZero() && now.Before(qp.req.rnrUntil) {
		return
	}
	if qp.comp.psn == qp.req.maxPSN {
		return
	}
	qp.dev.counters.inc(LocalACKTimeout)
	qp.retry(now, true)
	if qp.State() != ib.QPStateErr {
		qp.comp.restartTimer(now, &qp.attr)
	}
}

// retry starts a go-back-N retransmission, if retries are left. Only a
// timeout may start one while another is under way.
func (qp *QP) retry(now time.Time, timeout bool) {
	w := qp.oldest()
	if w == nil || (qp.comp.retrying && !timeout) {
		return
	}
	if qp.comp.retryCnt == 0 {
		qp.dev.counters.inc(RetryExceededErr)
		qp.failSend(w, ib.WCRetryExcErr)
		return
	}
	qp.comp.retryCnt--
	qp.comp.retrying = true
	qp.dev.counters.inc(CompleterRetryErr)
	qp.rewind()
	qp.comp.restartTimer(now, &qp.attr)
}

// rewind makes the requester resend from comp.psn (doc/protocol.md §8.3): the
// oldest WQE resumes after its acknowledged packets with its original PSNs
// and opcodes, every later started WQE is sent again from its start.
func (qp *QP) rewind() {
	qp.req.psn = qp.comp.psn
	qp.req.cur = qp.sq.Head()
	for i := qp.sq.Head(); i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if w.state == wqePosted || w.state == wqeFailed {
			break
		}
		w.sent = 0
		if i == qp.sq.Head() && !w.isReadAtomic() {
			w.sent = uint32(qp.comp.psn.Diff(w.firstPSN)) * qp.mtu
		}
		w.state = wqeSending
	}
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
		qp.req.rdAtomic--
	}
	if qp.req.cur == qp.sq.Head() {
		qp.req.cur++
	}
	qp.sq.Pop()
	if report {
		qp.sendCQ.push(&wc)
	}
}

// failSend completes w with an error and moves the QP to the error state,
// which flushes the rest.
func (qp *QP) failSend(w *sendWQE, status ib.WCStatus) {
	qp.finishSend(w, status)
	qp.state.Store(uint32(ib.QPStateErr))
}
