package engine

import (
	"net/netip"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

const (
	// ackEvery asks for an ACK after this many packets without one
	// (rxe: RXE_MAX_PKT_PER_ACK), so the window moves.
	ackEvery = 64
	// cleanPath is how many packets must have gone without a go-back-N
	// before the requester stops asking for an ACK at the end of every
	// message (ackWanted).
	cleanPath = 4096
	// defaultPKey is the only partition key: full member of the default
	// partition.
	defaultPKey = 0xffff
)

// requester is the send side's packet generator (doc/design.md §2).
// Owned by the QP's turn; only the requester writes it. It reads what the
// completer reports (see completer) and acts on it in catchUp.
type requester struct {
	psn             wire.PSN // PSN of the next packet
	maxPSN          wire.PSN // one past the highest PSN sent; psn is behind it while resending
	cur             uint32   // send-queue index of the WQE being sent
	rdAtomicStarted uint32   // READ/atomic WQEs started; less comp.rdAtomicDone, those in flight
	noAck           int      // packets sent since the last one with AckReq
	clean           int      // packets sent since the last go-back-N, up to cleanPath
	resends         uint32   // go-back-N requests of the completer acted on (comp.resends)
	asks            uint32   // READ asks of the completer sent (comp.asks)
	probes          uint32   // tail probes of the completer sent (comp.probes)
	seq             uint32   // READ and atomic requests sent, asks included
	win             window   // PSNs that may be in flight without an acknowledgement
}

// request turns send WQEs into packets, at most budget of them. It stops at
// flow limits (the send window, max_rd_atomic, fences, an RNR wait)
// and reports whether it stopped only for lack of budget.
func (qp *QP) request(now instant, budget int) (more bool) {
	st := qp.State()
	if st != ib.QPStateRTS && st != ib.QPStateSQD {
		return false
	}
	qp.catchUp()
	qp.sendAsks(now)
	qp.sendProbe()
	qp.req.win.update(now, qp.comp.psn)
	if now.Before(qp.comp.rnrUntil) {
		return false
	}
	for ; budget > 0 || qp.extends(); budget-- {
		if qp.req.cur == qp.sq.Tail() {
			return false
		}
		w := qp.sq.At(qp.req.cur)
		switch w.state {
		case wqeFailed:
			return false // the completer reports it in order
		case wqePosted:
			if st == ib.QPStateSQD || !qp.fitsWhole(w) || !qp.startWQE(w) {
				return false
			}
		}
		if w.isLocal() {
			qp.execLocal(w) // no packet: no window or rate applies (mw.go)
		} else {
			if qp.windowFull() || !qp.ccAllows(now) {
				return false
			}
			qp.sendNext(w, now)
		}
		switch w.state {
		case wqeFailed:
			if qp.sq.Head() == qp.req.cur {
				qp.failSend(w, w.status) // nothing before it: report now
			}
			return false
		case wqeSent:
			qp.req.cur++
		}
	}
	return qp.req.cur != qp.sq.Tail() // extends may have sent the last
}

// A turn sends what a link that coalesces sends (conn.RunLimiter:
// UDPBind's GSO) can carry in whole runs of equal-size packets, each one
// datagram for the kernel, whose way through the kernel is most of a
// sender's time: it does not start a short message that the window would
// cut while packets are in flight (fitsWhole), and past its budget it goes
// on while the next packet would join the run the batch ends with
// (extends), which ends a WRITE stream's turn with a message (its First
// packet, 16 bytes longer for the RETH, starts a run anyway) and a SEND
// stream's with a full run. ib_write_bw 64 KiB cut 2 568 messages at the
// window and 4 261 at the budget (which then stayed out of step with the
// messages) of 20 000, 2.22 datagrams a message where 2 is the least;
// sending them whole, medians of 8 alternated runs, pinned: 3.05 → 3.34
// GB/s and 0.595 → 0.559 CPU-s per GB (both processes), ahead in 6.
// A message is short if it is at most an eighth of the window: the
// window's room it leaves unused is then at most that. A requester held
// back this way has more than 7/8 of the window in flight, which holds a
// packet that asks for an ACK (ackEvery is less than that, held to at
// compile time below), so the ACK that lets it go is coming.
func (qp *QP) fitsWhole(w *sendWQE) bool {
	n := w.npkts(qp.mtu)
	if n == 1 || n > qp.req.win.size/8 || w.isLocal() || w.isReadAtomic() {
		return true
	}
	if qp.req.psn == qp.windowStart() {
		return true // nothing in flight: no acknowledgement would widen it
	}
	return !qp.windowFullAt(qp.req.psn.Add(n - 1))
}

// The array's length is negative, and the package fails to compile,
// unless ackEvery is at most 7/8 of the smallest window: the least that is
// in flight when fitsWhole holds a message back.
var _ [minWindow - minWindow/8 - ackEvery]struct{}

// extends reports whether the next packet of the SEND or WRITE being sent
// (RC's requester or UC's), which has sent some of its packets, would join
// the run the transmit batch ends with. The run limit bounds how far a
// turn goes past its budget. A message not begun waits for the next turn:
// going on into them cost ib_write_bw 8 B a tenth of its message rate
// (7 of 8 alternated pairs), the turn's 60 packets a run already.
func (qp *QP) extends() bool {
	if qp.req.cur == qp.sq.Tail() {
		return false
	}
	w := qp.sq.At(qp.req.cur)
	if w.state != wqeSending || w.sent == 0 || w.isReadAtomic() {
		return false
	}
	op, _, n := qp.nextSegment(w)
	return qp.xmit.joins(wire.PacketLen(op, int(n)))
}

// catchUp applies what the completer reported since the requester last
// ran: cur moves past WQEs completed under it, and a go-back-N it asked for
// rewinds to comp.psn, which shrinks the window.
func (qp *QP) catchUp() {
	if head := qp.sq.Head(); int32(qp.req.cur-head) < 0 {
		qp.req.cur = head
	}
	if qp.resendPending() {
		qp.req.win.loss(qp.comp.psn, qp.req.maxPSN)
		qp.req.resends = qp.comp.resends
		qp.req.clean = 0
		qp.rewind()
	}
}

// resendPending reports whether the completer asked for a go-back-N the
// requester has not made yet.
func (qp *QP) resendPending() bool { return qp.req.resends != qp.comp.resends }

// nextPSN returns the PSN the requester sends next, counting a go-back-N
// the completer asked for and the requester has not made yet.
func (qp *QP) nextPSN() wire.PSN {
	if qp.resendPending() {
		return qp.comp.psn
	}
	return qp.req.psn
}

// rdAtomicInFlight returns the READ and atomic WQEs started and not
// completed.
func (qp *QP) rdAtomicInFlight() uint32 { return qp.req.rdAtomicStarted - qp.comp.rdAtomicDone }

// rewind resends from comp.psn (doc/protocol.md §8.3): the oldest WQE resumes
// after its acknowledged packets with its original PSNs and opcodes, every
// later started WQE is sent again from its start.
func (qp *QP) rewind() {
	from := qp.comp.psn
	if r := qp.comp.resendFrom; qp.comp.resendSet && from.Less(r) && r.Less(qp.req.maxPSN) {
		from = r // the requests before it arrived (seqNAKPastRead)
	}
	qp.comp.resendSet = false // used once: a timeout goes back to psn
	qp.req.psn = from
	qp.req.cur = qp.sq.Tail()
	for i := qp.sq.Head(); i != qp.sq.Tail(); i++ {
		w := qp.sq.At(i)
		if w.state == wqePosted || w.state == wqeFailed {
			if qp.req.cur == qp.sq.Tail() {
				qp.req.cur = i
			}
			break
		}
		if w.isLocal() {
			continue // executed once, never again
		}
		if w.lastPSN.Less(from) {
			continue
		}
		if qp.req.cur == qp.sq.Tail() {
			qp.req.cur = i
			if !w.isReadAtomic() {
				w.sent = uint32(from.Diff(w.firstPSN)) * qp.mtu
			}
		} else {
			w.sent = 0
		}
		w.ask, w.beyond, w.sentAt = askNone, 0, 0
		w.state = wqeSending
	}
}

// startWQE assigns the WQE its PSNs if the flow limits allow it to start.
func (qp *QP) startWQE(w *sendWQE) bool {
	if w.flags&ib.SendFence != 0 && qp.rdAtomicInFlight() > 0 {
		return false // IBV_SEND_FENCE: earlier READs and atomics first
	}
	if w.isReadAtomic() {
		// max_rd_atomic 0 would forbid every READ; allow one, as the
		// peer's responder needs a resource for it anyway.
		if qp.rdAtomicInFlight() >= max(1, uint32(qp.attr.MaxRdAtomic)) {
			return false
		}
		qp.req.rdAtomicStarted++
	}
	w.firstPSN = qp.req.psn
	w.lastPSN = w.firstPSN.Add(w.npkts(qp.mtu) - 1)
	w.state, w.sent = wqeSending, 0
	w.got, w.hi, w.passAt, w.passed, w.beyond, w.ask = w.firstPSN, w.firstPSN, 0, false, 0, askNone
	w.sentAt = 0
	return true
}

// sendNext sends the WQE's next packet.
func (qp *QP) sendNext(w *sendWQE, now instant) {
	f := qp.bth(0, qp.req.psn) // the opcode is chosen below
	if qp.req.psn.Less(qp.req.maxPSN) && (w.opcode != ib.WRRDMARead || !w.lastPSN.Less(w.got)) {
		// Behind the highest PSN sent: a go-back-N resend, or a READ
		// asked again for what has not arrived.
		qp.dev.counters.inc(RetransmittedPkts)
	}
	switch {
	case w.opcode == ib.WRRDMARead:
		qp.sendRead(w, &f, now)
	case w.isAtomic():
		f.Opcode, f.AckRequest = wire.RCFetchAdd, true
		a := wire.AtomicETHFields{VA: w.remoteAddr, RKey: uint32(w.rkey), SwapAdd: w.compareAdd}
		if w.opcode == ib.WRAtomicCmpAndSwp {
			f.Opcode = wire.RCCompareSwap
			a.SwapAdd, a.Compare = w.swap, w.compareAdd
		}
		p := qp.xmit.start(qp, &f, 0)
		p.AtomicETH().Encode(&a)
		qp.xmit.queue(qp, p)
		qp.noteRequest(w, f.PSN, now)
		qp.req.psn = qp.req.psn.Next()
		w.state = wqeSent
	default:
		if !qp.sendSegment(w, &f) {
			return
		}
		if w.state == wqeSent && !f.PSN.Less(qp.req.maxPSN) {
			w.sentAt = now // its last packet, sent for the first time
		}
	}
	if qp.req.maxPSN.Less(qp.req.psn) {
		qp.req.maxPSN = qp.req.psn
	}
	if f.AckRequest {
		qp.req.noAck = 0
	} else {
		qp.req.noAck++
	}
	qp.req.clean = min(qp.req.clean+1, cleanPath)
	qp.comp.startTimer(now, &qp.attr)
	qp.armProbe(now)
}

// sendRead sends a READ request. After a go-back-N it asks only for what
// has not arrived (doc/protocol.md §8.3): from the READ's first missing
// response, not from where the go-back-N went back to, as a responder
// like rxe takes no request for a part before the last one asked; and a
// READ whose responses are all in is not asked again at all.
func (qp *QP) sendRead(w *sendWQE, f *wire.BTHFields, now instant) {
	if f.PSN.Less(w.got) {
		f.PSN = w.got
	}
	qp.req.psn = w.lastPSN.Next()
	w.state = wqeSent
	if w.lastPSN.Less(f.PSN) {
		return
	}
	done := uint32(f.PSN.Diff(w.firstPSN)) * qp.mtu
	f.Opcode, f.AckRequest = wire.RCReadRequest, true
	p := qp.xmit.start(qp, f, 0)
	p.RETH().Encode(&wire.RETHFields{VA: w.remoteAddr + uint64(done), RKey: uint32(w.rkey), DMALength: w.length - done})
	qp.xmit.queue(qp, p)
	qp.noteRequest(w, f.PSN, now)
	if f.PSN.Less(qp.req.maxPSN) {
		// Asked again by the go-back-N: as if asked by the completer.
		w.ask, w.askFrom, w.askTo, w.askAt, w.askSeq = askSent, f.PSN, w.lastPSN, now, w.seq
	}
}

// noteRequest numbers the READ or atomic request of PSN psn, and notes
// when a first one went out, for the round trip its response measures.
func (qp *QP) noteRequest(w *sendWQE, psn wire.PSN, now instant) {
	qp.req.seq++
	w.seq = qp.req.seq
	w.sentAt = 0
	if !psn.Less(qp.req.maxPSN) {
		w.sentAt = now
	}
}

// ackWanted reports whether the last packet of w, the WQE being sent,
// should ask for an ACK; only says that w is one packet long. On a path
// that lost nothing in the last cleanPath packets, only when no WQE is
// queued behind it, so that the sender's completions do not wait, or when
// it fills the send window, which only an ACK reopens: a stream of
// messages is then acknowledged every ackEvery packets instead of after
// every message, and the responder sends, and the requester takes, a
// fraction of the ACKs (ib_write_bw 64 KiB over loopback: 0.69 ACKs per
// message, a seventh of the responder's CPU in sending them, down to
// 0.25). Otherwise at the end of every message, as rxe does: a responder
// tells of a gap when a packet asks for an ACK (doc/protocol.md §6.3), so
// on a lossy path sparse requests would delay every go-back-N
// (BenchmarkLossRecovery's netem WRITE lost a fifth of its rate with
// them).
//
// A signaled one-packet message asks too. A poster bounded by its queue
// depth waits for such a completion (ib_write_bw keeps 128 WQEs posted and
// asks for every hundredth's), and its ACK otherwise came with the next
// ask, at the queue's end: the queue ran dry before the poster could fill
// it again. ib_write_bw 4 KiB, pinned, alternated: 5.5 and 7.3 % more
// messages a second (12 and 13 of 16 pairs), with fewer system calls a
// message on both sides (the responder's ACKs 0.029 → 0.020, the
// requester's sendmmsg 0.030 → 0.022-0.026); 8 B and ib_send_bw within
// the noise. A longer message already asks every ackEvery packets, and
// asking at the end of each signaled one doubled a 64 KiB stream's ACKs
// (perftest signals every message above 8 KiB) and cost it 8 % (4 of 12
// pairs higher).
func (qp *QP) ackWanted(w *sendWQE, only bool) bool {
	return qp.req.clean < cleanPath || qp.lastToSend() || only && w.signaled || qp.req.win.fills(qp.req.psn, qp.windowStart())
}

// gatherMin is the payload from which a packet's payload is sent from its
// memory region instead of copied into the packet buffer: the link then
// gathers it as an iovec of its own, which for a few bytes costs more than
// the copy it saves.
const gatherMin = 512

// sealWholeMax is the longest payload copied first and then sealed with the
// packet in one pass: for a few bytes the ICRC's calls, not its bytes, are
// the cost, and running it while copying takes three (start, payload,
// pad and trailer) where the whole packet takes two.
const sealWholeMax = 64

// gathers reports whether the n payload bytes of w from w.sent leave from
// their memory region, without a copy (doc/design.md §2, "Transmit"): at
// least gatherMin of them, not inline, within one SGE.
func (w *sendWQE) gathers(n uint32) bool {
	if n < gatherMin || w.flags&ib.SendInline != 0 {
		return false
	}
	_, _, one := sgeAt(w.sge, w.sent, n)
	return one
}

// startPayload starts the next packet of w, with n payload bytes: only its
// head if they leave from their region (gather), else the whole packet.
func (qp *QP) startPayload(w *sendWQE, f *wire.BTHFields, n uint32) (p wire.Packet, gather bool) {
	gather = w.gathers(n)
	return qp.xmit.startHead(qp, f, int(n), gather), gather
}

// queuePayload seals p, started by startPayload and its headers filled,
// for envelope e with the n payload bytes of w from w.sent, and queues it
// to dst (a connected QP's peer, a UD send's address handle): from the
// memory region itself if they gather, from the WQE's inline copy, or
// copied out of the SGEs. It reports false, queueing nothing, on a local
// protection fault.
func (qp *QP) queuePayload(w *sendWQE, p wire.Packet, gather bool, e *wire.Envelope, dst *netip.AddrPort, n uint32) bool {
	switch {
	case gather:
		ref, f := qp.sgeSpan(w.sge, w.sent, n)
		if f != mem.FaultNone {
			return false
		}
		crc := p.StartICRCElided(e, int(n))
		crc.Write(ref.Bytes())
		p.SealICRCState(crc)
		qp.xmit.queueGatheredTo(qp, p, ref, dst)
		return true
	case n <= sealWholeMax:
		if w.flags&ib.SendInline != 0 {
			copy(p.Payload(), w.inline[w.sent:w.sent+n])
		} else if qp.gatherSGEs(w.sge, w.sent, p.Payload(), nil) != mem.FaultNone {
			return false
		}
		p.SealICRC(e)
		qp.xmit.queueSealedTo(qp, p, dst)
		return true
	}
	crc := p.StartICRC(e)
	if w.flags&ib.SendInline != 0 {
		crc.Copy(p.Payload(), w.inline[w.sent:w.sent+n])
	} else if qp.gatherSGEs(w.sge, w.sent, p.Payload(), &crc) != mem.FaultNone {
		return false
	}
	p.SealICRCState(crc)
	qp.xmit.queueSealedTo(qp, p, dst)
	return true
}

// nextSegment returns the opcode, message position and payload length of
// the next packet of a SEND or RDMA WRITE (sendSegment's, and what extends
// sizes).
func (qp *QP) nextSegment(w *sendWQE) (op wire.Opcode, pos position, n uint32) {
	resid := w.length - w.sent
	pos = positionOf(w.sent > 0, resid, qp.mtu)
	return rcOpcodes[w.opcode][pos] + wire.Opcode(qp.kind.transport), pos, min(resid, qp.mtu)
}

// sendSegment sends the next packet of a SEND or RDMA WRITE message, whose
// opcode follows from the message position (doc/protocol.md §5.2); a UC
// QP's opcodes are RC's plus 0x20 and ask for no ACK (§13.1).
func (qp *QP) sendSegment(w *sendWQE, f *wire.BTHFields) bool {
	op, pos, n := qp.nextSegment(w)
	last := pos == posLast || pos == posOnly
	f.Opcode = op
	f.AckRequest = qp.kind.acked && (qp.req.noAck >= ackEvery || last && qp.ackWanted(w, pos == posOnly))
	f.SolicitedEvent = last && w.flags&ib.SendSolicited != 0 && (w.isSend() || w.opcode == ib.WRRDMAWriteWithImm)
	p, gather := qp.startPayload(w, f, n)
	if h := p.RETH(); h != nil {
		h.Encode(&wire.RETHFields{VA: w.remoteAddr, RKey: uint32(w.rkey), DMALength: w.length})
	}
	if h := p.ImmDt(); h != nil {
		h.SetImm(w.imm)
	}
	if h := p.IETH(); h != nil {
		h.SetRKey(w.imm)
	}
	if !qp.queuePayload(w, p, gather, &qp.env, qp.peer.Load(), n) {
		qp.xmit.abort()
		w.state, w.status = wqeFailed, compErrors[compLocalProt].status
		return false
	}
	qp.req.psn = qp.req.psn.Next()
	w.sent += n
	if w.sent == w.length {
		w.state = wqeSent
	}
	return true
}
