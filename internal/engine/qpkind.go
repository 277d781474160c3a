package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// qpKind is everything a QP's transport service changes in the engine
// (doc/protocol.md §13). The generic code consults it at a few named
// points — posting, the receive checks, the turn — and the rest of a
// service lives in its own files: RC in requester.go, completer.go and
// responder.go, UC in requester_uc.go and responder_uc.go, UD in
// requester_ud.go, responder_ud.go and recv_ud.go. A new service (the
// connection manager's QP1, say) is a row here and files of its own.
type qpKind struct {
	// transport is the opcode base of the service's packets; a packet of
	// another transport is dropped (doc/protocol.md §1.4 step 3).
	transport wire.Transport
	// ops is the set of send opcodes it accepts, one bit per
	// ib.WROpcode (doc/protocol.md §10.5).
	ops uint32
	// connected services have one peer, fixed at RTR: packets go to it
	// and come only from it (doc/protocol.md §1.4 step 6). A datagram QP
	// takes packets from anyone who knows its Q_Key, and each send names
	// its destination.
	connected bool
	// acked services answer requests with ACKs and NAKs and resend what
	// was lost (RC); the others complete a send once its packets are out
	// and drop what arrives incomplete.
	acked bool
	// grh services start every receive buffer with the network header of
	// the packet that filled it (UD, doc/protocol.md §13.3): their packets
	// wait in the inbound ring with that header (recv_ud.go).
	grh bool
	// request turns send WQEs into packets, at most budget of them, and
	// reports whether it stopped only for lack of budget.
	request func(qp *QP, now instant, budget int) bool
	// respond executes one received request packet, which arrived by now.
	respond func(qp *QP, in *inPkt, now instant)
	// segment sends the next packet of a SEND or WRITE of an unacked
	// service (requester_uc.go).
	segment func(qp *QP, w *sendWQE)
}

func ops(o ...ib.WROpcode) uint32 {
	var m uint32
	for _, op := range o {
		m |= 1 << op
	}
	return m
}

var qpKinds = [...]qpKind{
	ib.QPTypeRC: {
		transport: wire.TransportRC,
		ops: ops(ib.WRSend, ib.WRSendWithImm, ib.WRRDMAWrite, ib.WRRDMAWriteWithImm,
			ib.WRRDMARead, ib.WRAtomicCmpAndSwp, ib.WRAtomicFetchAndAdd,
			ib.WRSendWithInv, ib.WRBindMW, ib.WRLocalInv),
		connected: true, acked: true,
		request: (*QP).request,
		respond: func(qp *QP, in *inPkt, now instant) { qp.respond(in.packet(), now) },
	},
	ib.QPTypeUC: {
		transport: wire.TransportUC,
		ops:       ops(ib.WRSend, ib.WRSendWithImm, ib.WRRDMAWrite, ib.WRRDMAWriteWithImm),
		connected: true,
		request:   (*QP).requestUnacked,
		respond:   func(qp *QP, in *inPkt, _ instant) { qp.respondUC(in) },
		segment:   (*QP).sendUCSegment,
	},
	ib.QPTypeUD: {
		transport: wire.TransportUD,
		ops:       ops(ib.WRSend, ib.WRSendWithImm),
		grh:       true,
		request:   (*QP).requestUnacked,
		respond:   func(qp *QP, in *inPkt, _ instant) { qp.respondUD(in) },
		segment:   (*QP).sendDatagram,
	},
}

// kindOf returns the service of QP type t, or nil if there is none.
func kindOf(t ib.QPType) *qpKind {
	if int(t) >= len(qpKinds) || qpKinds[t].request == nil {
		return nil
	}
	return &qpKinds[t]
}

// allows reports whether the service accepts send opcode op.
func (k *qpKind) allows(op ib.WROpcode) bool { return op < 32 && k.ops&(1<<op) != 0 }

// admitsDatagram is the last header check of the receive loop for a
// datagram QP, where a connected one checks the source (doc/protocol.md
// §1.4 step 6): the DETH must carry the QP's Q_Key (§13.3), and the
// datagram fit the largest MTU. It returns the drop counter of a packet
// refused, or numCounters.
func (qp *QP) admitsDatagram(p wire.Packet) Counter {
	switch {
	case p.DETH().QKey() != qp.qkey.Load():
		return DropBadQKey
	case len(p) > maxDatagram:
		return DropMalformed
	}
	return numCounters
}
