package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// compError is why the completer fails a send WQE.
type compError uint8

const (
	compOK            compError = iota
	compRemInvReq               // NAK invalid request
	compRemAccess               // NAK remote access error
	compRemOp                   // NAK remote operational error, or a code we do not know
	compRetryExceeded           // retry_cnt used up by timeouts and sequence NAKs
	compRNRExceeded             // rnr_retry used up by RNR NAKs
	compBadResponse             // READ response of the wrong length
	compLocalProt               // local SGE fault: gathering send data or placing a response
)

// compErrors is the one table of requester errors (IBA 9.9.2, the NAK codes
// of IBA 9.7.5.2 and table 43): the NAK code that reports it (byNAK), the
// status of the failed WQE, and the counter it bumps. Every one moves the
// QP to the error state, which flushes the WQEs behind it.
var compErrors = [...]struct {
	byNAK   bool
	nak     wire.NAKCode
	status  ib.WCStatus
	counter Counter // numCounters: none
}{
	compRemInvReq:     {true, wire.NAKInvalidRequest, ib.WCRemInvReqErr, numCounters},
	compRemAccess:     {true, wire.NAKRemoteAccess, ib.WCRemAccessErr, numCounters},
	compRemOp:         {true, wire.NAKRemoteOperation, ib.WCRemOpErr, numCounters},
	compRetryExceeded: {status: ib.WCRetryExcErr, counter: RetryExceededErr},
	compRNRExceeded:   {status: ib.WCRNRRetryExcErr, counter: RetryRNRExceededErr},
	compBadResponse:   {status: ib.WCBadRespErr, counter: numCounters},
	compLocalProt:     {status: ib.WCLocProtErr, counter: numCounters},
}

// nakError returns the error a NAK code reports; reserved codes and the RD
// code count as remote operational errors, as rxe has it.
func nakError(code wire.NAKCode) compError {
	for e := range compErrors {
		if c := &compErrors[e]; c.byNAK && c.nak == code {
			return compError(e)
		}
	}
	return compRemOp
}

// compSeqNAK resends from the PSN the responder expects (IBA 9.7.5.2, NAK
// code 0). A NAK for the PSN the requester has already gone back to (after
// an RNR NAK, or a NAK that was sent twice) starts no second retry
// (doc/protocol.md §8.2). One for a PSN inside a READ or atomic, past its
// first, names a PSN no responder expects, as it takes them all at once
// (§6.3): it is dropped, as going back there would skip the READ's
// missing responses, and the READ complete with a hole.
func (qp *QP) compSeqNAK(c *compCtx) compPhase {
	if c.w == nil || qp.nextPSN() == c.psn {
		return compUpdate
	}
	if c.w.isReadAtomic() && c.w.firstPSN.Less(c.psn) {
		return compMismatch
	}
	qp.comp.psn = c.psn
	return compRetry
}

// compRNRNAK waits the responder's RNR timer, then resends from the NAK's
// PSN; rnr_retry 7 retries for ever (IBA 9.7.5.2.8).
func (qp *QP) compRNRNAK(c *compCtx) compPhase {
	if c.w == nil {
		return compUpdate
	}
	if qp.attr.RNRRetry != 7 {
		if qp.comp.rnrRetry == 0 {
			c.err = compRNRExceeded
			return compFail
		}
		qp.comp.rnrRetry--
	}
	qp.comp.psn = c.psn
	qp.comp.rnrUntil = c.now.Add(c.p.AETH().Syndrome().RNRTimer().Duration())
	// The NAK answered what the timer was waiting for; the resend after
	// the wait starts it again, so the wait never eats into the timeout.
	qp.comp.deadline = 0
	qp.resend()
	return compUpdate
}

// checkTimers fires the local ACK timeout (IBA 9.7.6.1.3). A timeout that
// expires during an RNR wait does not start a retry (doc/protocol.md §8.3): it
// is dropped, and the resend after the wait starts the timer again. What
// counts is when it expired, not when the turn got to it: a turn that runs
// late must not turn the wait's timeout into a retry.
func (qp *QP) checkTimers(now instant) {
	qp.checkGaps(now)
	qp.checkProbe(now)
	qp.checkStall(now)
	d := qp.comp.deadline
	if d.IsZero() || now.Before(d) {
		return
	}
	qp.comp.deadline = 0
	if d.Before(qp.comp.rnrUntil) || qp.comp.psn == qp.req.maxPSN {
		return
	}
	qp.dev.counters.inc(LocalACKTimeout)
	qp.dev.recheckFlow(qp.flow)
	if e := qp.retry(now, true); e != compOK {
		qp.fail(qp.oldest(), e)
		return
	}
	qp.comp.restartTimer(now, &qp.attr)
}

// retry starts a go-back-N retransmission, if retries are left; it reports
// compRetryExceeded when none are. Only a timeout may start one while
// another is under way.
func (qp *QP) retry(now instant, timeout bool) compError {
	if qp.oldest() == nil || (qp.comp.retrying && !timeout) {
		return compOK
	}
	if qp.comp.retryCnt == 0 {
		return compRetryExceeded
	}
	qp.comp.retryCnt--
	qp.comp.retrying = true
	qp.dev.counters.inc(CompleterRetryErr)
	qp.resend()
	qp.comp.restartTimer(now, &qp.attr)
	return compOK
}

// fail completes w with error e, counts it, and moves the QP to the error
// state.
func (qp *QP) fail(w *sendWQE, e compError) {
	if c := compErrors[e].counter; c != numCounters {
		qp.dev.counters.inc(c)
	}
	qp.failSend(w, compErrors[e].status)
}

// failSend completes w with an error and moves the QP to the error state,
// which flushes the rest.
func (qp *QP) failSend(w *sendWQE, status ib.WCStatus) {
	qp.finishSend(w, status)
	qp.enterError(ib.EventQPFatal)
}
