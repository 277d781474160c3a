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
	sentNAK bool     // a sequence NAK is out: quiet until back in order
	inSend  bool     // between the FIRST and LAST packets of a SEND
	inWrite bool     // between the FIRST and LAST packets of a WRITE
	haveWQE bool     // wqe holds the receive WQE of the SEND in progress
	wqe     recvWQE
	recvOff uint32 // bytes of the SEND placed so far
	write   writeState
	// ackPending asks for an ACK of ackPSN at the end of the turn, so one
	// ACK answers every AckReq packet of a batch.
	ackPending bool
	ackPSN     wire.PSN
	res        []resource // responder resources (max_dest_rd_atomic)
	resNext    int
	read       readStream // READ responses still to send
}

// writeState is the RDMA WRITE in progress, from its RETH.
type writeState struct {
	va    uint64
	rkey  uint32
	resid uint32 // bytes still to come
	total uint32 // DMA length, reported by WRITE_WITH_IMM completions
}

// resource remembers an executed READ or atomic so a duplicate can be
// answered (doc/protocol.md §7.6).
type resource struct {
	kind        wire.OpFlags // wire.OpRead or wire.OpAtomic; 0 = empty
	first, last wire.PSN
	va          uint64
	rkey        uint32
	length      uint32
	orig        uint64 // atomic: value before the operation
}

// respError is a responder error class.
type respError uint8

const (
	respOK respError = iota
	errInvalidRequest
	errRemoteAccess
	errRecvLength
	errRecvProt
)

// respErrors is the one table of responder errors (IBA 9.9.3, doc/protocol.md
// §12.3): the NAK sent, and the status of the receive WQE in use, if any.
// Every class moves the QP to the error state.
var respErrors = [...]struct {
	nak    wire.NAKCode
	status ib.WCStatus
}{
	errInvalidRequest: {wire.NAKInvalidRequest, ib.WCRemInvReqErr},
	errRemoteAccess:   {wire.NAKRemoteAccess, ib.WCRemAccessErr},
	errRecvLength:     {wire.NAKInvalidRequest, ib.WCLocLenErr},
	errRecvProt:       {wire.NAKRemoteOperation, ib.WCLocProtErr},
}

// respond handles one request packet.
func (qp *QP) respond(p wire.Packet) {
	psn := p.BTH().PSN()
	r := &qp.resp
	switch d := psn.Diff(r.psn); {
	case d > 0: // a packet went missing (doc/protocol.md §6.3)
		qp.dev.counters.inc(OutOfSeqRequest)
		if !r.sentNAK {
			r.sentNAK = true
			qp.sendACK(wire.NAKSyndrome(wire.NAKPSNSequenceError), r.psn)
			qp.dev.counters.inc(NAKSent)
		}
		return
	case d < 0:
		qp.dev.counters.inc(DuplicateRequest)
		qp.duplicate(p, psn)
		return
	}
	r.sentNAK = false
	info := p.Info()
	var e respError
	switch {
	case !r.inOrder(info):
		e = errInvalidRequest // opcode out of sequence (doc/protocol.md §6.3)
	case info.Is(wire.OpSend):
		e = qp.respSend(p, psn)
	case info.Is(wire.OpWrite):
		e = qp.respWrite(p, psn)
	case info.Is(wire.OpRead):
		e = qp.respRead(p, psn)
	case info.Is(wire.OpAtomic):
		e = qp.respAtomic(p, psn)
	default: // FLUSH, ATOMIC WRITE: not advertised, not supported
		e = errInvalidRequest
	}
	if e != respOK {
		qp.respFail(e, psn)
	}
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
	w := qp.rq.Peek()
	if w == nil {
		qp.dev.counters.inc(SendRNRErr)
		qp.sendACK(wire.RNRNAKSyndrome(wire.RNRTimer(qp.attr.MinRNRTimer)), psn)
		return false
	}
	r.wqe.wrID, r.wqe.length = w.wrID, w.length
	r.wqe.sge = append(r.wqe.sge[:0], w.sge...)
	qp.rq.Pop()
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
func (qp *QP) respSend(p wire.Packet, psn wire.PSN) respError {
	info, r := p.Info(), &qp.resp
	if info.Is(wire.OpFirst) && !qp.takeWQE(psn) {
		return respOK // RNR NAK sent, PSN not consumed
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
		var imm *uint32
		if h := p.ImmDt(); h != nil {
			v := h.Imm()
			imm = &v
		}
		qp.completeRecv(ib.WCRecv, r.recvOff, imm)
		r.msn++
	}
	qp.acceptRequest(p, psn)
	return respOK
}

// respWrite places RDMA WRITE data into the target region.
func (qp *QP) respWrite(p wire.Packet, psn wire.PSN) respError {
	info, r := p.Info(), &qp.resp
	if info.Is(wire.OpFirst) {
		if qp.attr.AccessFlags&ib.AccessRemoteWrite == 0 {
			return errInvalidRequest // rxe answers a QP without the right so
		}
		reth := p.RETH()
		if reth.DMALength() > MaxMsgSize {
			return errInvalidRequest
		}
		// A zero-length WRITE checks no key (doc/protocol.md §12.3 step 7).
		if n := reth.DMALength(); n > 0 {
			ref, f := qp.dev.mrs.Acquire(mem.Key(reth.RKey()), qp.pd, reth.VA(), uint64(n), ib.AccessRemoteWrite)
			if f != mem.FaultNone {
				return errRemoteAccess
			}
			ref.Release()
		}
		r.write = writeState{va: reth.VA(), rkey: reth.RKey(), resid: reth.DMALength(), total: reth.DMALength()}
	}
	// WRITE WITH IMMEDIATE consumes a receive WQE at its last packet: check
	// before placing anything, so an RNR NAK leaves no trace.
	if p.ImmDt() != nil && !qp.takeWQE(psn) {
		return respOK
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
		ref, f := qp.dev.mrs.Acquire(mem.Key(r.write.rkey), qp.pd, r.write.va, uint64(n), ib.AccessRemoteWrite)
		if f != mem.FaultNone {
			return errRemoteAccess // deregistered in the middle of the message
		}
		copy(ref.Bytes(), data)
		ref.Release()
	}
	r.write.va += uint64(n)
	r.write.resid -= n
	r.inWrite = !info.Is(wire.OpLast)
	if info.Is(wire.OpLast) {
		if h := p.ImmDt(); h != nil {
			v := h.Imm()
			qp.completeRecv(ib.WCRecvRDMAWithImm, r.write.total, &v)
		}
		r.msn++
	}
	qp.acceptRequest(p, psn)
	return respOK
}

// acceptRequest advances the expected PSN past a SEND or WRITE packet and
// notes the ACK it asked for.
func (qp *QP) acceptRequest(p wire.Packet, psn wire.PSN) {
	r := &qp.resp
	r.psn = psn.Next()
	if p.BTH().AckRequest() {
		r.ackPending, r.ackPSN = true, psn
	}
}

// respFail sends the NAK of error class e, fails the receive WQE in use and
// moves the QP to the error state.
func (qp *QP) respFail(e respError, psn wire.PSN) {
	c := respErrors[e]
	qp.sendACK(wire.NAKSyndrome(c.nak), psn)
	qp.dev.counters.inc(NAKSent)
	if qp.resp.haveWQE {
		wc := WC{WRID: qp.resp.wqe.wrID, Status: c.status, QPNum: ib.QPN(qp.qpn)}
		qp.recvCQ.push(&wc)
		qp.resp.haveWQE = false
	}
	qp.state.Store(uint32(ib.QPStateErr))
}

// completeRecv completes the receive WQE in use.
func (qp *QP) completeRecv(op ib.WCOpcode, n uint32, imm *uint32) {
	wc := WC{WRID: qp.resp.wqe.wrID, Opcode: op, ByteLen: n, QPNum: ib.QPN(qp.qpn), SrcQP: qp.attr.DestQPN}
	if imm != nil {
		wc.Imm, wc.Flags = *imm, ib.WCFlagWithImm
	}
	qp.recvCQ.push(&wc)
	qp.dev.counters.inc(RDMARecvs)
	qp.resp.haveWQE = false
}

// sendACK sends an ACK-opcode packet (ACK, RNR NAK or NAK) with the
// current MSN. A pending coalesced ACK goes first, to keep PSNs in order.
func (qp *QP) sendACK(s wire.Syndrome, psn wire.PSN) {
	qp.sendPendingACK()
	f := qp.bth(wire.RCAcknowledge, psn)
	p := qp.xmit.start(qp, &f, 0)
	p.AETH().Encode(&wire.AETHFields{Syndrome: s, MSN: qp.resp.msn})
	qp.xmit.queue(qp, p)
}

// sendPendingACK sends the coalesced ACK, if one is due.
func (qp *QP) sendPendingACK() {
	r := &qp.resp
	if !r.ackPending {
		return
	}
	r.ackPending = false
	qp.dev.counters.inc(ACKSent)
	qp.sendACK(wire.ACKSyndrome(wire.CreditsUnlimited), r.ackPSN)
}
