package engine

import (
	"encoding/binary"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// READ recovery (doc/protocol.md §8.3). READ and atomic responses are
// placed as they come, in order or not: a READ's data goes straight to
// its offset in the local SGEs, an atomic's result to its buffer, and a
// scoreboard keeps the PSNs placed past comp.psn, which completes the
// WQEs in order once what comes before them is in. Nothing is asked again
// for a response that is only late: a READ whose first missing response
// the stream has passed — dupThresh responses past it, each right after
// one placed, or one response past it and a reorder window without it —
// is asked again, once, for what it misses, and asked again after that
// only when the answer's own stream shows it lost too. The local ACK
// timeout stays the last resort: a go-back-N that asks every READ again
// for what has not arrived.
const (
	// boardBits bounds how far past comp.psn a response can be placed;
	// one further is dropped and asked again later.
	boardBits = 8192
	// dupThresh is how many responses past a READ's first missing one,
	// each right after one already placed, show it lost rather than
	// overtaken: a packet a network reorders arrives alone, ahead of its
	// neighbours, while a loss leaves a run of responses behind it.
	dupThresh = 3
	// minReorder bounds the reorder window below.
	minReorder = time.Microsecond
)

// askState is where a READ's request for what it misses stands.
type askState uint8

const (
	askNone    askState = iota
	askPending          // the requester has it to send
	askSent             // sent; its answer is awaited
)

// board is the completer's scoreboard: one bit per PSN, modulo boardBits,
// for the responses placed past comp.psn. Made at the first one.
type board struct {
	bits []uint64
	n    int // bits set
}

func (b *board) has(psn wire.PSN) bool {
	if b.n == 0 {
		return false
	}
	i := uint32(psn) % boardBits
	return b.bits[i/64]&(1<<(i%64)) != 0
}

func (b *board) set(psn wire.PSN) {
	if b.bits == nil {
		b.bits = make([]uint64, boardBits/64)
	}
	i := uint32(psn) % boardBits
	if m := uint64(1) << (i % 64); b.bits[i/64]&m == 0 {
		b.bits[i/64] |= m
		b.n++
	}
}

func (b *board) unset(psn wire.PSN) {
	if b.has(psn) {
		i := uint32(psn) % boardBits
		b.bits[i/64] &^= 1 << (i % 64)
		b.n--
	}
}

func (b *board) reset() {
	clear(b.bits)
	b.n = 0
}

// windowFull reports whether the send window holds the requester back.
// Responses placed ahead of a gap are in and count as acknowledged, so a
// lost READ response stalls nothing while it is asked for again; the span
// from comp.psn stays within half the scoreboard, so what is asked next
// can be placed.
func (qp *QP) windowFull() bool { return qp.windowFullAt(qp.req.psn) }

// windowFullAt is windowFull for a packet at psn (fitsWhole asks it of a
// message's last).
func (qp *QP) windowFullAt(psn wire.PSN) bool {
	return qp.req.win.full(psn, qp.windowStart()) || psn.Diff(qp.comp.psn) >= boardBits/2
}

// windowStart is the PSN the send window counts from: the first not
// acknowledged, moved on by the responses placed ahead of a gap.
func (qp *QP) windowStart() wire.PSN {
	return qp.comp.psn.Add(uint32(qp.comp.board.n))
}

// placed reports whether the response at psn is in: completed, or placed
// ahead.
func (qp *QP) placed(psn wire.PSN) bool {
	return psn.Less(qp.comp.psn) || qp.comp.board.has(psn)
}

// wqeAt returns the started send WQE whose PSNs hold psn, or nil: the
// one being sent too, which the window may have stopped inside.
func (qp *QP) wqeAt(psn wire.PSN) *sendWQE {
	for i := qp.sq.Head(); i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if w.state == wqePosted || psn.Less(w.firstPSN) {
			return nil
		}
		if psn.LessEq(w.lastPSN) {
			return w
		}
	}
	return nil
}

// compAhead handles a READ response or atomic ACK for a PSN past comp.psn:
// the data or result is placed now, its PSN marked, and what it shows of
// the READs before it noted. The response at comp.psn itself comes here
// too when the scoreboard holds others.
func (qp *QP) compAhead(c *compCtx) compPhase {
	x := qp.wqeAt(c.psn)
	if x == nil || x.state == wqeFailed {
		return compMismatch
	}
	if a := c.p.AETH(); a != nil && a.Syndrome().Type() != wire.SyndromeACK {
		return compMismatch
	}
	if c.psn.Diff(qp.comp.psn) >= boardBits {
		qp.dev.counters.inc(DropUnexpectedResponse)
		return compUpdate
	}
	contiguous := qp.placed(c.psn.Sub(1))
	if qp.comp.board.has(c.psn) {
		// Seen again: the answer to a READ asked again, or a copy.
		qp.dev.counters.inc(DropDuplicateResponse)
		qp.noteAhead(x, c.psn, contiguous, c.now)
		qp.comp.restartTimer(c.now, &qp.attr)
		return compUpdate
	}
	switch {
	case x.opcode == ib.WRRDMARead && c.p.Info().Is(wire.OpRead):
		if ph := qp.placeRead(c, x); ph != compUpdate {
			return ph
		}
	case x.isAtomic() && c.p.Opcode() == wire.RCAtomicAcknowledge && c.psn == x.firstPSN:
		var orig [8]byte
		binary.NativeEndian.PutUint64(orig[:], c.p.AtomicAckETH().OrigData())
		if f := qp.copySGEs(x.sge, 0, orig[:], true); f != mem.FaultNone {
			c.w, c.err = x, compLocalProt
			return compFail
		}
	default:
		return compMismatch
	}
	qp.sampleRTT(x, c.psn, c.now)
	qp.comp.board.set(c.psn)
	if x.opcode == ib.WRRDMARead && c.psn == x.got {
		p := c.psn.Next()
		for p.LessEq(x.lastPSN) && qp.placed(p) {
			p = p.Next()
		}
		qp.gotTo(x, p)
	}
	qp.noteAhead(x, c.psn, contiguous, c.now)
	qp.comp.restartTimer(c.now, &qp.attr)
	qp.advance()
	return compUpdate
}

// placeRead checks a READ response of x and copies its payload to where it
// belongs in x's local SGEs.
func (qp *QP) placeRead(c *compCtx, x *sendWQE) compPhase {
	off := uint32(c.psn.Diff(x.firstPSN)) * qp.mtu
	want := qp.mtu
	if c.psn == x.lastPSN {
		want = x.length - off
	}
	data := c.p.Payload()
	if uint32(len(data)) != want {
		c.w, c.err = x, compBadResponse
		return compFail
	}
	if f := qp.copySGEs(x.sge, off, data, true); f != mem.FaultNone {
		c.w, c.err = x, compLocalProt
		return compFail
	}
	if c.psn.Less(x.hi) {
		return compUpdate
	}
	x.hi = c.psn.Next()
	return compUpdate
}

// advance moves comp.psn over the responses placed past it and completes,
// in order, the WQEs it passes: READs whose every response is in,
// atomics whose result is, and the SENDs and WRITEs acknowledged.
func (qp *QP) advance() {
	c := &qp.comp
	for {
		w := qp.completeThrough(c.ackNext.Sub(1))
		if w == nil || !w.isReadAtomic() || w.state == wqeFailed {
			return
		}
		for c.psn.LessEq(w.lastPSN) && c.board.has(c.psn) {
			c.board.unset(c.psn)
			c.psn = c.psn.Next()
		}
		if w.opcode == ib.WRRDMARead && w.got.Less(c.psn) {
			qp.gotTo(w, c.psn)
		}
		if c.psn.LessEq(w.lastPSN) {
			return
		}
		c.reload(&qp.attr)
		qp.finishSend(w, ib.WCSuccess)
	}
}

// advanceBehind completes, after an in-order response, what it brought
// into order: responses placed ahead of it, or SENDs and WRITEs an
// earlier response acknowledged past it. Without either it costs nothing.
func (qp *QP) advanceBehind() {
	if c := &qp.comp; c.board.n > 0 || c.psn.Less(c.ackNext) {
		qp.advance()
	}
}

// compPast handles a response past the oldest WQE, a READ or atomic that
// only its own response completes. Past a READ, a READ response or atomic
// ACK of a later WQE is placed, and an ACK acknowledges the SENDs and
// WRITEs before it; both show the READ's stream passed (completer_read.go).
// Anything else — past an atomic, or a NAK — means a response was lost:
// go back (retryLost).
func (qp *QP) compPast(c *compCtx) compPhase {
	if c.w.opcode == ib.WRRDMARead {
		switch op := c.p.Opcode(); {
		case c.p.Info().Is(wire.OpRead), op == wire.RCAtomicAcknowledge:
			return compAhead
		case op == wire.RCAcknowledge && c.p.AETH().Syndrome().Type() == wire.SyndromeACK:
			qp.comp.acked(c.psn.Next())
			qp.notePassed(c.psn, c.now)
			qp.comp.restartTimer(c.now, &qp.attr)
			qp.advance()
			return compUpdate
		case op == wire.RCAcknowledge && c.p.AETH().Syndrome() == wire.NAKSyndrome(wire.NAKPSNSequenceError):
			return qp.seqNAKPastRead(c)
		}
	}
	return qp.retryLost(c)
}

// seqNAKPastRead handles a sequence NAK for a PSN past a READ still waiting
// for responses: the responder has every request before the NAK's PSN,
// the READs among them included, so the go-back-N resends from that PSN
// only; what those READs miss they ask for themselves (completer_read.go).
// Going back to the READ instead asked every READ again in full behind a
// lost request: over memconn with the lab's netem line, 64 KiB READs 16
// deep, a responder that took the repeats as loss signals paced them down
// to 1.3 MB/s.
func (qp *QP) seqNAKPastRead(c *compCtx) compPhase {
	qp.dev.counters.inc(NAKRcvd)
	qp.dev.counters.inc(RcvdSeqErr)
	c.nak = true
	qp.comp.acked(c.psn)
	qp.advance()
	if (qp.req.psn == c.psn && !qp.resendPending()) || qp.comp.retrying {
		// Gone back there already (nothing resent yet), or a go-back-N is
		// under way, which a NAK does not restart (doc/protocol.md §8.2):
		// a resendFrom left behind would make a later timeout's go-back-N
		// skip the READ (the million-operation soak failed a READ so).
		return compUpdate
	}
	qp.comp.resendFrom, qp.comp.resendSet = c.psn, true
	return compRetry
}

// acked notes that a response acknowledged every SEND and WRITE before psn.
func (c *completer) acked(psn wire.PSN) {
	if c.ackNext.Less(psn) {
		c.ackNext = psn
	}
}
