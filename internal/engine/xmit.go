package engine

import (
	"net/netip"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// xmitBatch collects a turn's outgoing packets in pooled buffers and hands
// them to the link in one Send. Retransmissions are rebuilt from the WQE
// (go-back-N), so buffers are freed as soon as the link has them.
//
// A link that coalesces runs of equal-size packets into one send (UDP
// GSO) gives them IPv4 IDs 0, 1, 2, …, which the ICRC covers: packets are
// sealed for the QP's envelope (ID 0), and flush has the link plan the
// IDs and reseals each packet for its own (conn.IPIDPlanner). A turn's
// packets of one QP mostly have one size (MTU-sized middles, or equal
// small messages), so they form long runs.
//
// A packet whose payload lies in a memory region may leave from there: the
// slab holds its head, the headers and the trailer (wire.NewPacketHead),
// the message gathers the region's bytes between them (conn.Message.Body),
// and the batch holds the region until the link has sent it, so a
// deregistration waits for it.
type xmitBatch struct {
	msgs   []conn.Message
	bufs   []*pktBuf
	pkts   []wire.Packet // pkts[i]: packet i laid out in bufs[i] or the slab, or its head if its payload is msgs[i].Body
	refs   []mem.Ref     // refs[i]: the region msgs[i].Body lies in, if any
	sealed []uint16      // sealed[i]: the IPv4 ID packet i's ICRC is for
	n      int
	bytes  int64 // bytes queued since the QP was created, for congestion control
	// The run the batch ends with, as a link that coalesces sends groups
	// them (conn.RunLimiter): runLen packets of runSize bytes, of at most
	// runMax, shut when its last was shorter.
	runSize, runLen, runMax int
	runShut                 bool
	// spare keeps the buffers of the last sends, up to xmitSpares, for
	// the next: a ping-pong's turn sends two packets (an answer and the
	// ACK), and taking them from the shared pool and putting them back
	// cost a tenth of BenchmarkWriteLatEngine's time.
	spare []*pktBuf
	// slab holds the batch's short packets, of at most slabPkt bytes (an
	// ACK, a READ request, a small WRITE or SEND), end to end from its
	// start up to slabUsed: room for one in each of the batch's places,
	// taken without the pool and its synchronisation, and the run's
	// packets adjacent in memory. A flush empties it.
	slab     []byte
	slabUsed int
	// max is the most packets the batch holds (init); it starts with
	// room for xmitStart and doubles when a turn fills it (start), so that
	// a QP that never streams does not hold room for a stream's turn.
	max int
	// peak is the most packets a flush sent since the turn's end last
	// looked, and wideAt when that was more than xmitStart (QP.shrink):
	// a batch in use is not shrunk.
	peak   int
	wideAt instant
}

// xmitSpares is how many buffers a QP's batch keeps between flushes, at
// pktBufSize bytes each; xmitStart is how many packets a new batch has
// room for, a ping-pong's turn's and more.
const (
	xmitSpares = 2
	xmitStart  = 8
)

// slabPkt is the longest packet laid out in the batch's slab: a WRITE ONLY
// with up to 96 bytes of payload, a SEND ONLY with up to 112. pktBufSize
// bytes of the pool hold each longer one.
const slabPkt = 128

// init bounds the batch at a whole turn, a turnBudget of requests, the
// rest of their last run (extends) and a turnBudget of responses or ACKs,
// and at least the link's batch: one Send per turn, which the link splits
// into system calls as it must (a GSO link carries up to a few hundred
// packets in one). A run longer than a turnBudget is cut by a flush. The
// room grows to that bound as turns need it (start).
func (x *xmitBatch) init(linkBatch int) {
	x.max = max(linkBatch, 3*turnBudget)
	x.resize(min(xmitStart, x.max))
	x.spare = make([]*pktBuf, 0, xmitSpares)
}

// resize gives the batch room for size packets (at least those it holds),
// keeping them: larger for a turn that fills it (start), smaller once
// empty for a while (QP.shrink).
func (x *xmitBatch) resize(size int) {
	x.msgs = append(make([]conn.Message, 0, size), x.msgs[:x.n]...)[:size]
	x.bufs = append(make([]*pktBuf, 0, size), x.bufs[:x.n]...)[:size]
	x.pkts = append(make([]wire.Packet, 0, size), x.pkts[:x.n]...)[:size]
	x.refs = append(make([]mem.Ref, 0, size), x.refs[:x.n]...)[:size]
	x.sealed = append(make([]uint16, 0, size), x.sealed[:x.n]...)[:size]
	// The packets queued stay where they are, in the old slab, until the
	// flush; the new one starts empty.
	x.slab, x.slabUsed = make([]byte, size*slabPkt), 0
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
	p, err := wire.NewPacket(x.room(qp, wire.PacketLen(f.Opcode, payloadLen)), 0, f, payloadLen)
	if err != nil {
		// Opcodes and lengths come from the engine's own tables and the
		// path MTU; a failure here is a bug, not bad input.
		panic("engine: building " + f.Opcode.String() + ": " + err.Error())
	}
	return p
}

// startHead is start for a packet whose payload the link is to gather from
// a memory region (queueGathered), if gather: it lays out only the
// packet's head, its headers, pad and trailer (wire.NewPacketHead), which
// the slab holds. Otherwise it is start.
func (x *xmitBatch) startHead(qp *QP, f *wire.BTHFields, payloadLen int, gather bool) wire.Packet {
	if !gather {
		return x.start(qp, f, payloadLen)
	}
	p, err := wire.NewPacketHead(x.room(qp, wire.HeadLen(f.Opcode, payloadLen)), f, payloadLen)
	if err != nil {
		panic("engine: building " + f.Opcode.String() + ": " + err.Error())
	}
	return p
}

// room returns n bytes for the batch's next packet, flushing first if the
// batch is full: in the slab if they fit, else a buffer of the pool.
func (x *xmitBatch) room(qp *QP, n int) []byte {
	if x.n == len(x.msgs) {
		if x.n < x.max {
			x.resize(min(2*x.n, x.max))
		} else {
			x.flush(qp)
		}
	}
	if n <= slabPkt && x.slabUsed+n <= len(x.slab) {
		// It fits unless aborted packets used up room (abort).
		buf := x.slab[x.slabUsed : x.slabUsed+n]
		x.slabUsed += n
		x.bufs[x.n] = nil
		return buf
	}
	var b *pktBuf
	if k := len(x.spare); k > 0 {
		b, x.spare = x.spare[k-1], x.spare[:k-1]
	} else {
		b = getBuf()
	}
	x.bufs[x.n] = b
	return b.b[:]
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
func (x *xmitBatch) queueSealed(qp *QP, p wire.Packet) { x.queueSealedTo(qp, p, qp.peer.Load()) }

// queueSealedTo is queueSealed to dst: a connected QP's peer, or the
// address handle of a UD send.
func (x *xmitBatch) queueSealedTo(qp *QP, p wire.Packet, dst *netip.AddrPort) {
	x.msgs[x.n] = conn.Message{Buf: p, Addr: *dst, Flow: qp.flowTo(dst)}
	x.add(qp, p)
}

// queueGathered adds p, the head of a packet sealed by the caller
// (startHead), whose payload the link is to send from the region ref
// holds: the batch keeps the access until the packet is sent.
func (x *xmitBatch) queueGathered(qp *QP, p wire.Packet, ref mem.Ref) {
	x.queueGatheredTo(qp, p, ref, qp.peer.Load())
}

// queueGatheredTo is queueGathered to dst.
func (x *xmitBatch) queueGatheredTo(qp *QP, p wire.Packet, ref mem.Ref, dst *netip.AddrPort) {
	h := p.Info().HeaderLen
	x.msgs[x.n] = conn.Message{Buf: p[:h], Body: ref.Bytes(), Tail: p[h:], Addr: *dst, Flow: qp.flowTo(dst)}
	x.refs[x.n] = ref
	x.add(qp, p)
}

// flowTo returns the link flow packets to dst leave by: the QP's to its
// peer, none to an address handle's destination (a UD send), whose
// packets are sealed for the device's address.
func (qp *QP) flowTo(dst *netip.AddrPort) int {
	if qp.flow != 0 && dst == qp.peer.Load() {
		return qp.flow
	}
	return 0
}

// add enters p, sealed for the QP's envelope's IPv4 ID — 0, as every
// envelope an engine seals for, a UD send's too — in the batch, whose
// message for it is filled.
func (x *xmitBatch) add(qp *QP, p wire.Packet) {
	size := x.msgs[x.n].Size()
	x.pkts[x.n] = p
	x.bytes += int64(size)
	x.sealed[x.n] = qp.env.IPID
	x.n++
	x.extendRun(size, qp.dev.runLimit)
}

// extendRun notes a packet of size bytes added at the end of the batch.
// The link's limit is asked once a run, when it starts.
func (x *xmitBatch) extendRun(size int, limit func(int) int) {
	if limit == nil {
		return
	}
	if x.runLen == 0 || x.runShut || size > x.runSize || x.runLen >= x.runMax {
		x.runSize, x.runLen, x.runMax, x.runShut = size, 1, limit(size), false
		return
	}
	x.runLen++
	x.runShut = size < x.runSize
}

// joins reports whether a packet of size bytes added now would join the
// run the batch ends with, and the batch has room for it.
func (x *xmitBatch) joins(size int) bool {
	return x.runLen > 0 && !x.runShut && size <= x.runSize && x.runLen < x.runMax && x.n < x.max
}

// abort frees the buffer of a packet started but not queued. Its room in
// the slab stays used until the flush, or is free at once if nothing is
// queued.
func (x *xmitBatch) abort() {
	x.free(x.bufs[x.n])
	x.bufs[x.n] = nil
	if x.n == 0 {
		x.slabUsed = 0
	}
}

// free keeps b as a spare, or puts it back in the pool; nil is a packet
// in the slab.
func (x *xmitBatch) free(b *pktBuf) {
	if b == nil {
		return
	}
	if len(x.spare) < xmitSpares {
		x.spare = append(x.spare, b)
		return
	}
	putBuf(b)
}

// flush sends the batch and frees its buffers.
func (x *xmitBatch) flush(qp *QP) {
	if x.n == 0 {
		return
	}
	x.peak = max(x.peak, x.n)
	sent, err := x.send(qp)
	qp.dev.counters.add(SentPkts, uint64(sent))
	if err != nil || sent < x.n {
		qp.dev.counters.add(SendErr, uint64(x.n-sent))
	}
	x.discard()
}

// send hands the batch to the link, planned and resealed if the link
// plans IPv4 IDs. If the plan went out of date before the send
// (conn.ErrReplan: the link stopped coalescing, for good, or another QP
// sent by the same flow in between), the rest is planned again, a few
// times at most; what still fails is counted and retransmitted as a loss.
func (x *xmitBatch) send(qp *QP) (int, error) {
	pl := qp.dev.planner
	if pl == nil {
		return qp.dev.bind.Send(x.msgs[:x.n])
	}
	sent := 0
	for try := 0; ; try++ {
		x.plan(pl, sent)
		n, err := qp.dev.bind.Send(x.msgs[sent:x.n])
		sent += n
		if err != conn.ErrReplan || try >= maxReplans {
			return sent, err
		}
	}
}

// maxReplans bounds the plans of a batch after its first. A flow's plan
// goes out of date when another QP's send by the flow comes between plan
// and send, which a retry rarely meets again, or when the flow probes
// first (a recheck), after which the plan made again holds.
const maxReplans = 8

// plan has the link plan the IDs of packets from, and reseals those whose
// planned ID differs from the one they were sealed for. (Over IPv6 the
// plan is all 0: there is no ID.)
func (x *xmitBatch) plan(pl conn.IPIDPlanner, from int) {
	pl.PlanIPIDs(x.msgs[from:x.n])
	for i := from; i < x.n; i++ {
		if id := x.msgs[i].IPID; id != x.sealed[i] {
			x.pkts[i].ResealIPIDElided(x.sealed[i], id, len(x.msgs[i].Body))
			x.sealed[i] = id
		}
	}
}

// discard frees the batch's buffers and regions without sending.
func (x *xmitBatch) discard() {
	for i := range x.n {
		x.free(x.bufs[i])
		x.bufs[i], x.pkts[i] = nil, nil
		x.refs[i].Release()
		x.msgs[i] = conn.Message{}
	}
	x.n, x.runLen, x.slabUsed = 0, 0, 0
}
