package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// responder executes incoming requests. Owned by the QP's turn.
type responder struct {
	psn     wire.PSN // next request PSN expected
	msn     uint32   // completed request messages (AETH MSN)
	sentNAK bool     // a sequence NAK is out: quiet until back in order, then ACK
	inSend  bool     // between the FIRST and LAST packets of a SEND
	inWrite bool     // between the FIRST and LAST packets of a WRITE
	haveWQE bool     // wqe holds the receive WQE of the SEND in progress
	dropMsg bool     // UC, UD: the message in progress is dropped, and its packets until a FIRST or ONLY
	wqe     recvWQE
	recvOff uint32 // bytes of the SEND placed so far
	write   writeState
	// ackPending asks for an ACK of ackPSN at the end of the turn, so one
	// ACK answers every AckReq packet of a batch.
	ackPending bool
	ackPSN     wire.PSN
	// ackBase is the ICRC of the QP's ACKs with PSN, syndrome and MSN
	// zero (wire.Packet.ACKICRCBase), once ackBased: an ACK is sealed
	// from it by table lookups. The responder is made anew at RTR, where
	// the envelope and the destination QP are set.
	ackBase  uint32
	ackBased bool
	res      []resource // responder resources (max_dest_rd_atomic)
	resNext  int
	read     readStream // READ responses still to send
	readQ    readQueue  // READs accepted behind read
	sent     readSent   // READ responses sent, for pace and the retransmission count
	pace     pacer      // paces the READ responses
	fresh    bool       // read is a new READ that came with no stream under way
	stash    stash      // SEND and WRITE packets that came ahead of psn
	rx       bool       // requests arrived in this turn (armStall)
	lost     bool       // and one of them was out of sequence
	lostAt   instant    // when the last such turn was
	stallAt  instant    // when the stall NAK is due (probe.go)
	nakAt    instant    // when the sequence NAK out was sent, for its round trip

	// ackFirst is set when a message of the turn completed a receive: the
	// ACK then leaves ahead of the turn's requests (QP.turn).
	ackFirst bool

	// Duplicates whose answer waits for READ responses (responder_dup.go):
	// some do (dupLater), among them SENDs or WRITEs up to dupPSN (dupACK),
	// and the atomics of the resources marked replay.
	dupLater bool
	dupACK   bool
	dupPSN   wire.PSN
}

// writeState is the RDMA WRITE in progress, from its RETH.
type writeState struct {
	va    uint64
	rkey  uint32
	resid uint32 // bytes still to come
	total uint32 // DMA length, reported by WRITE_WITH_IMM completions
}

// respOutcome is what the responder made of one request packet: the
// outcomes of its checks (doc/protocol.md §12.3), and the error classes of
// IBA 9.9.3.
type respOutcome uint8

const (
	respDone      respOutcome = iota // in order and executed: data placed, READ started, atomic done
	respRNR                          // no receive WQE: RNR NAK, PSN not consumed (IBA 9.7.5.2.8)
	respSeqNAK                       // PSN ahead: PSN sequence error NAK (IBA 9.7.5.2, code 0)
	respSeqDrop                      // PSN ahead after that NAK: dropped until back in order
	respHeld                         // SEND or WRITE packet ahead: held until its turn
	respDupACK                       // duplicate SEND or WRITE: acknowledged again
	respDupRead                      // duplicate READ: executed again
	respDupAtomic                    // duplicate atomic: answered from its resource
	respDupDrop                      // duplicate matching no resource: dropped
	respDupLater                     // duplicate SEND, WRITE or atomic: answered after the READ responses before it
	respBehind                       // request at or past the expected PSN: held while a READ stream runs
	// The error classes, from here on: each sends a NAK and moves the QP
	// to the error state (respErrors).
	errInvalidRequest
	errRemoteAccess
	errRecvLength
	errRecvProt
)

var respOutcomeNames = [...]string{
	respDone:          "done",
	respRNR:           "RNR NAK",
	respSeqNAK:        "PSN sequence NAK",
	respSeqDrop:       "out of sequence, dropped",
	respHeld:          "out of sequence, held",
	respDupACK:        "duplicate, ACK again",
	respDupRead:       "duplicate READ, execute again",
	respDupAtomic:     "duplicate atomic, replay",
	respDupDrop:       "duplicate, dropped",
	respDupLater:      "duplicate, answered after the READ responses",
	respBehind:        "held behind a READ stream",
	errInvalidRequest: "invalid request",
	errRemoteAccess:   "remote access error",
	errRecvLength:     "receive length error",
	errRecvProt:       "receive protection error",
}

func (o respOutcome) String() string { return respOutcomeNames[o] }

func (o respOutcome) isError() bool { return o >= errInvalidRequest }

// respErrors is the one table of responder errors (IBA 9.9.3, doc/protocol.md
// §12.3): the NAK sent (IBA 9.7.5.2, table 43), and the status of the
// receive WQE in use, if any. Every class moves the QP to the error state.
var respErrors = [...]struct {
	nak    wire.NAKCode
	status ib.WCStatus
	event  ib.EventType // the affiliated asynchronous error (IBA 11.6.3.2)
}{
	errInvalidRequest: {wire.NAKInvalidRequest, ib.WCRemInvReqErr, ib.EventQPReqErr},
	errRemoteAccess:   {wire.NAKRemoteAccess, ib.WCRemAccessErr, ib.EventQPAccessErr},
	errRecvLength:     {wire.NAKInvalidRequest, ib.WCLocLenErr, ib.EventQPReqErr},
	errRecvProt:       {wire.NAKRemoteOperation, ib.WCLocProtErr, ib.EventQPFatal},
}

// respond handles one request packet, at now: its PSN decides between a
// new request, a duplicate and a gap (doc/protocol.md §6.3).
func (qp *QP) respond(p wire.Packet, now instant) {
	psn := p.BTH().PSN()
	qp.noteReceived()
	qp.resp.rx = true
	var o respOutcome
	switch d := psn.Diff(qp.resp.psn); {
	case d >= 0 && qp.readWaits(p):
		o = qp.holdBehindStream(p, psn, d)
	case d > 0:
		o = qp.respAhead(p, psn, d, now)
	case d < 0:
		qp.dev.counters.inc(DuplicateRequest)
		qp.dev.recheckFlow(qp.flow) // the answers went missing: perhaps all of them
		o = qp.duplicate(p, psn)
	default:
		if r := &qp.resp; r.sentNAK && !r.nakAt.IsZero() {
			qp.comp.smooth(now.Sub(r.nakAt)) // the NAK's round trip
			r.nakAt = 0
		}
		// A copy held earlier, which a stream kept from running, is the
		// same request: drop it, or it would run when the PSNs come round.
		qp.resp.stash.take(psn)
		qp.respondInOrder(p, psn)
		qp.replayStash()
		return
	}
	if qp.trace != nil {
		qp.traceResp(p.Opcode(), psn, o)
	}
}

// respondInOrder executes the request at the expected PSN.
func (qp *QP) respondInOrder(p wire.Packet, psn wire.PSN) {
	o := qp.execute(p, psn)
	if o.isError() {
		qp.respFail(o, psn)
	}
	qp.resp.sentNAK = false
	if qp.trace != nil {
		qp.traceResp(p.Opcode(), psn, o)
	}
}

// execute runs the request at the expected PSN.
func (qp *QP) execute(p wire.Packet, psn wire.PSN) respOutcome {
	info := p.Info()
	switch {
	case !qp.resp.inOrder(info):
		return errInvalidRequest // opcode out of sequence (doc/protocol.md §6.3)
	case info.Is(wire.OpSend):
		return qp.respSend(p, psn)
	case info.Is(wire.OpWrite):
		return qp.respWrite(p, psn)
	case info.Is(wire.OpRead):
		return qp.respRead(p, psn)
	case info.Is(wire.OpAtomic):
		return qp.respAtomic(p, psn)
	}
	return errInvalidRequest // FLUSH, ATOMIC WRITE: not advertised, not supported
}

// remote resolves an access of n bytes at va under rkey, with the QP's PD
// and right need; any fault of the key, the bounds or the rights is a
// remote access error (NAK code 2, IBA table 43). The caller releases the
// ref.
func (qp *QP) remote(rkey uint32, va uint64, n uint32, need ib.AccessFlags) (mem.Ref, respOutcome) {
	ref, f := qp.dev.mrs.AcquireRemote(mem.Key(rkey), qp.pd, qp.qpn, va, uint64(n), need)
	if f != mem.FaultNone {
		return ref, errRemoteAccess
	}
	return ref, respDone
}

// checkRemote validates a remote access without making it. A zero-length
// one checks no key (doc/protocol.md §12.3 step 7).
func (qp *QP) checkRemote(rkey uint32, va uint64, n uint32, need ib.AccessFlags) respOutcome {
	if n == 0 {
		return respDone
	}
	ref, o := qp.remote(rkey, va, n, need)
	if o == respDone {
		ref.Release()
	}
	return o
}

// inOrder checks the opcode sequence: inside a SEND or WRITE only its
// MIDDLE and LAST packets may come; outside, only a FIRST or ONLY.
func (r *responder) inOrder(info *wire.OpInfo) bool {
	switch {
	case r.inSend:
		return info.Is(wire.OpSend) && !info.Is(wire.OpFirst)
	case r.inWrite:
		return info.Is(wire.OpWrite) && !info.Is(wire.OpFirst)
	}
	return info.Is(wire.OpFirst)
}

// takeWQE makes sure a receive WQE is at hand for a packet that consumes
// one; without one it sends an RNR NAK and the packet is dropped
// (doc/protocol.md §7.3).
func (qp *QP) takeWQE(psn wire.PSN) bool {
	r := &qp.resp
	if r.haveWQE {
		return true
	}
	if !qp.popRecv(&r.wqe) {
		qp.dev.counters.inc(SendRNRErr)
		qp.sendACK(wire.RNRNAKSyndrome(wire.RNRTimer(qp.attr.MinRNRTimer)), psn)
		return false
	}
	r.haveWQE, r.recvOff = true, 0
	return true
}

// payloadOK applies the packet-length rules of doc/protocol.md §5.4 (C9-94).
func (qp *QP) payloadOK(info *wire.OpInfo, n int) bool {
	mtu := int(qp.mtu)
	switch {
	case info.Is(wire.OpOnly):
		return n <= mtu
	case info.Is(wire.OpLast):
		return n >= 1 && n <= mtu
	}
	return n == mtu // FIRST, MIDDLE
}

// respSend places SEND data into the receive WQE and completes it at the
// last packet.
func (qp *QP) respSend(p wire.Packet, psn wire.PSN) respOutcome {
	info, r := p.Info(), &qp.resp
	if info.Is(wire.OpFirst) && !qp.takeWQE(psn) {
		return respRNR
	}
	data := p.Payload()
	if !qp.payloadOK(info, len(data)) {
		return errInvalidRequest
	}
	if uint64(r.recvOff)+uint64(len(data)) > uint64(r.wqe.length) {
		return errRecvLength
	}
	if f := qp.copySGEs(r.wqe.sge, r.recvOff, data, true); f != mem.FaultNone {
		return errRecvProt
	}
	r.recvOff += uint32(len(data))
	r.inSend = !info.Is(wire.OpLast)
	if info.Is(wire.OpLast) {
		if o := qp.invalidateIETH(p); o != respDone { // responder_inv.go
			return o
		}
		qp.completeRecv(ib.WCRecv, r.recvOff, p)
		r.msn++
	}
	qp.acceptRequest(p, psn)
	return respDone
}

// respWrite places RDMA WRITE data into the target region.
func (qp *QP) respWrite(p wire.Packet, psn wire.PSN) respOutcome {
	info, r := p.Info(), &qp.resp
	if info.Is(wire.OpFirst) {
		if qp.attr.AccessFlags&ib.AccessRemoteWrite == 0 {
			return errInvalidRequest // rxe answers a QP without the right so
		}
		reth := p.RETH()
		if reth.DMALength() > MaxMsgSize {
			return errInvalidRequest
		}
		if o := qp.checkRemote(reth.RKey(), reth.VA(), reth.DMALength(), ib.AccessRemoteWrite); o != respDone {
			return o
		}
		r.write = writeState{va: reth.VA(), rkey: reth.RKey(), resid: reth.DMALength(), total: reth.DMALength()}
	}
	// WRITE WITH IMMEDIATE consumes a receive WQE at its last packet: check
	// before placing anything, so an RNR NAK leaves no trace.
	if p.ImmDt() != nil && !qp.takeWQE(psn) {
		return respRNR
	}
	data := p.Payload()
	n := uint32(len(data))
	// rxe's strict write-length rules (doc/protocol.md §5.3).
	if r.write.resid > qp.mtu {
		if info.Is(wire.OpLast) || n != qp.mtu {
			return errInvalidRequest
		}
	} else if !info.Is(wire.OpLast) || n != r.write.resid {
		return errInvalidRequest
	}
	if n > 0 {
		ref, o := qp.remote(r.write.rkey, r.write.va, n, ib.AccessRemoteWrite)
		if o != respDone {
			return o // deregistered in the middle of the message
		}
		mem.Place(ref.Bytes(), data)
		ref.Release()
	}
	r.write.va += uint64(n)
	r.write.resid -= n
	r.inWrite = !info.Is(wire.OpLast)
	if info.Is(wire.OpLast) {
		if p.ImmDt() != nil {
			qp.completeRecv(ib.WCRecvRDMAWithImm, r.write.total, p)
		}
		r.msn++
	}
	qp.acceptRequest(p, psn)
	return respDone
}

// acceptRequest advances the expected PSN past a SEND or WRITE packet and
// notes the ACK it asked for. The packet that fills the gap of a sequence
// NAK is acknowledged whether it asks or not: a requester that went back
// for the NAK takes no further sequence NAK as a reason to go back again
// until an ACK shows the resend arriving (rxe's requester does so), so without it a second loss in the resend would wait for
// the requester's timer (doc/protocol.md §6.3).
func (qp *QP) acceptRequest(p wire.Packet, psn wire.PSN) {
	r := &qp.resp
	r.psn = psn.Next()
	if qp.kind.acked && (p.BTH().AckRequest() || r.sentNAK) {
		r.ackPending, r.ackPSN = true, psn
	}
}

// respFail sends the NAK of error class e, fails the receive WQE in use and
// moves the QP to the error state.
func (qp *QP) respFail(e respOutcome, psn wire.PSN) {
	c := respErrors[e]
	qp.sendACK(wire.NAKSyndrome(c.nak), psn)
	qp.dev.counters.inc(NAKSent)
	if qp.resp.haveWQE {
		wc := WC{WRID: qp.resp.wqe.wrID, Status: c.status, Opcode: ib.WCRecv, QPNum: ib.QPN(qp.qpn)}
		qp.recvCQ.push(&wc)
		qp.resp.haveWQE = false
	}
	qp.enterError(c.event)
}

// completeRecv completes the receive WQE in use, at p, the message's last
// packet: its immediate data or the key it invalidated (which share the
// field, as in ibv_wc), and its solicited-event bit.
func (qp *QP) completeRecv(op ib.WCOpcode, n uint32, p wire.Packet) {
	wc := WC{WRID: qp.resp.wqe.wrID, Opcode: op, ByteLen: n, QPNum: ib.QPN(qp.qpn), SrcQP: qp.attr.DestQPN}
	if h := p.ImmDt(); h != nil {
		wc.Imm, wc.Flags = h.Imm(), ib.WCFlagWithImm
	}
	if h := p.IETH(); h != nil {
		wc.Imm, wc.Flags = h.RKey(), ib.WCFlagWithInv
	}
	qp.recvCQ.pushSolicited(&wc, p.BTH().SolicitedEvent())
	qp.dev.counters.inc(RDMARecvs)
	qp.resp.haveWQE, qp.resp.ackFirst = false, true
}

// sendACK sends an ACK-opcode packet (ACK, RNR NAK or NAK) with the
// current MSN. A pending coalesced ACK goes first, to keep PSNs in order.
func (qp *QP) sendACK(s wire.Syndrome, psn wire.PSN) {
	qp.sendPendingACK()
	f := qp.bth(wire.RCAcknowledge, psn)
	p := qp.xmit.start(qp, &f, 0)
	p.AETH().Encode(&wire.AETHFields{Syndrome: s, MSN: qp.resp.msn})
	r := &qp.resp
	if !r.ackBased {
		r.ackBase, r.ackBased = p.ACKICRCBase(&qp.env), true
	}
	p.SealACK(r.ackBase)
	qp.xmit.queueSealed(qp, p)
}

// sendPendingACK sends the coalesced ACK, if one is due.
func (qp *QP) sendPendingACK() {
	r := &qp.resp
	r.ackFirst = false
	if !r.ackPending {
		return
	}
	r.ackPending = false
	qp.dev.counters.inc(ACKSent)
	qp.sendACK(wire.ACKSyndrome(wire.CreditsUnlimited), r.ackPSN)
}
