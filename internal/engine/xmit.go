package engine

import (
	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
)

// xmitBatch collects a turn's outgoing packets in pooled buffers and hands
// them to the link in one Send. Retransmissions are rebuilt from the WQE
// (go-back-N), so buffers are freed as soon as the link has them.
type xmitBatch struct {
	msgs []conn.Message
	bufs []*pktBuf
	n    int
}

func (x *xmitBatch) init(size int) {
	x.msgs = make([]conn.Message, max(size, 1))
	x.bufs = make([]*pktBuf, max(size, 1))
}

// bth returns the BTH fields of a packet to the QP's peer: opcode op and
// PSN psn, on the default partition.
func (qp *QP) bth(op wire.Opcode, psn wire.PSN) wire.BTHFields {
	return wire.BTHFields{Opcode: op, PKey: defaultPKey, DestQP: uint32(qp.attr.DestQPN), PSN: psn}
}

// start lays out a packet in a fresh buffer of the batch, flushing first if
// the batch is full. The caller fills headers and payload, then calls
// queue.
func (x *xmitBatch) start(qp *QP, f *wire.BTHFields, payloadLen int) wire.Packet {
	if x.n == len(x.msgs) {
		x.flush(qp)
	}
	b := getBuf()
	x.bufs[x.n] = b
	p, err := wire.NewPacket(b.b[:], 0, f, payloadLen)
	if err != nil {
		// Opcodes and lengths come from the engine's own tables and the
		// path MTU; a failure here is a bug, not bad input.
		panic("engine: building " + f.Opcode.String() + ": " + err.Error())
	}
	return p
}

// queue seals p and adds it to the batch.
func (x *xmitBatch) queue(qp *QP, p wire.Packet) {
	p.SealICRC(&qp.env)
	x.queueSealed(qp, p)
}

// queueSealed adds p, whose ICRC the caller wrote, to the batch. Packets
// with a payload from memory are sealed from a wire.ICRCState run over the
// region while copying (gatherSGEs), so the payload is read once besides
// the copy.
func (x *xmitBatch) queueSealed(qp *QP, p wire.Packet) {
	x.msgs[x.n] = conn.Message{Buf: p, Addr: *qp.peer.Load()}
	x.n++
}

// abort frees the buffer of a packet started but not queued.
func (x *xmitBatch) abort() {
	putBuf(x.bufs[x.n])
	x.bufs[x.n] = nil
}

// flush sends the batch and frees its buffers.
func (x *xmitBatch) flush(qp *QP) {
	if x.n == 0 {
		return
	}
	sent, err := qp.dev.bind.Send(x.msgs[:x.n])
	qp.dev.counters.add(SentPkts, uint64(sent))
	if err != nil || sent < x.n {
		qp.dev.counters.add(SendErr, uint64(x.n-sent))
	}
	x.discard()
}

// discard frees the batch's buffers without sending.
func (x *xmitBatch) discard() {
	for i := range x.n {
		putBuf(x.bufs[i])
		x.bufs[i] = nil
		x.msgs[i] = conn.Message{}
	}
	x.n = 0
}
