package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// resource remembers an executed READ or atomic so a duplicate can be
// answered (doc/protocol.md §7.6).
type resource struct {
	kind        wire.OpFlags // wire.OpRead or wire.OpAtomic; 0 = empty
	first, last wire.PSN
	va          uint64
	rkey        uint32
	length      uint32
	orig        uint64 // atomic: value before the operation
	// READ: a response was sent, in loss epoch sentIn (readSent.epoch).
	sent   bool
	sentIn uint32
	// atomic: a duplicate waits for READ responses before it to be
	// answered (answerPassed).
	replay bool
}

// respRead executes an RDMA READ request: it takes a responder resource and
// streams the response packets.
func (qp *QP) respRead(p wire.Packet, psn wire.PSN) respOutcome {
	if qp.attr.AccessFlags&ib.AccessRemoteRead == 0 || len(qp.resp.res) == 0 {
		return errInvalidRequest // no right, or max_dest_rd_atomic 0 (doc/protocol.md §12.3 steps 3-4)
	}
	reth := p.RETH()
	n := reth.DMALength()
	if n > MaxMsgSize {
		return errInvalidRequest
	}
	if o := qp.checkRemote(reth.RKey(), reth.VA(), n, ib.AccessRemoteRead); o != respDone {
		return o
	}
	npkts := max(1, (n+qp.mtu-1)/qp.mtu)
	i := qp.resp.resNext
	res := qp.takeResource()
	*res = resource{kind: wire.OpRead, first: psn, last: psn.Add(npkts - 1), va: reth.VA(), rkey: reth.RKey(), length: n}
	qp.resp.msn++
	qp.resp.psn = res.last.Next()
	qp.startRead(readStream{res: i, end: res.last, va: reth.VA(), rkey: reth.RKey(), length: n, psn: psn})
	return respDone
}

// readStream is a READ whose responses are being sent, as the pacer
// allows and a turn's budget at a time. Responses go out in PSN order
// (doc/protocol.md §7.3), so every request that is answered waits behind it,
// except READs, which queue behind it (readQueue).
type readStream struct {
	active  bool
	started bool     // a response of this READ has been sent
	repeat  bool     // a READ asked again (doc/protocol.md §7.6)
	res     int      // its responder resource
	end     wire.PSN // of its last response
	va      uint64
	rkey    uint32
	length  uint32
	off     uint32   // bytes sent
	psn     wire.PSN // of the next response
	reqPSN  wire.PSN // of the request, for a NAK
	msn     uint32   // for the AETH: the MSN once this READ was accepted (doc/protocol.md §7.2)
}

// maxQueuedReads bounds the READs queued behind the one being sent; a
// READ beyond it waits in the inbound queue.
const maxQueuedReads = 16

// readQueue holds the READs accepted while another one is being sent, in
// the order they go: the READs asked again first (repeatRead), then the
// others as they came. Like the stream, it is dropped with the responder
// at RTR.
type readQueue struct {
	q [maxQueuedReads]readStream
	n int
}

func (q *readQueue) push(s *readStream) { q.insert(q.n, s) }

func (q *readQueue) insert(i int, s *readStream) {
	copy(q.q[i+1:q.n+1], q.q[i:q.n])
	q.q[i] = *s
	q.n++
}

func (q *readQueue) remove(i int) {
	copy(q.q[i:q.n-1], q.q[i+1:q.n])
	q.n--
}

func (q *readQueue) pop() readStream {
	s := q.q[0]
	q.remove(0)
	return s
}

// readSent tracks the responses sent, for the pacer's loss signal and the
// retransmission count.
type readSent struct {
	valid bool     // a response was sent: max means something
	max   wire.PSN // one past the highest response ever sent
	// epoch counts the losses signalled: a READ asked again for
	// responses sent before the last one is that loss seen again.
	epoch uint32
	// loss is set when a READ is asked again from lossPSN; the next turn
	// backs the pacer off, as it knows the time.
	loss    bool
	lossPSN wire.PSN
}

// startRead sends the responses of s after the READs before it. A
// pending coalesced ACK goes first.
func (qp *QP) startRead(s readStream) {
	s.active, s.reqPSN, s.msn = true, s.psn, qp.resp.msn
	if qp.resp.read.active {
		qp.resp.readQ.push(&s)
		return
	}
	qp.sendPendingACK()
	qp.resp.read, qp.resp.fresh = s, true
}

// readWaits reports whether the request p must wait for the READ streams
// to end before it runs: its answer would overtake their responses. READs
// at or before the expected PSN pass, to queue or to restart a stream,
// while the queue has room; so do the other duplicates, which are
// answered in their PSN order among the responses (responder_dup.go),
// and every response to this QP's own requests.
func (qp *QP) readWaits(p wire.Packet) bool {
	info := p.Info()
	if !qp.resp.read.active || !info.Is(wire.OpRequest) {
		return false
	}
	d := p.BTH().PSN().Diff(qp.resp.psn)
	if !info.Is(wire.OpRead) {
		return d >= 0
	}
	return d > 0 || qp.resp.readQ.n == maxQueuedReads
}

// queueWaits reports whether the request p, which must wait for the READ
// streams (readWaits), waits in the inbound queue: only a duplicate READ
// finding the queue full does. A request at or past the expected PSN
// waits in the stash instead (holdBehindStream), so that the requests
// behind it — above all duplicates, answered now — do not wait with it.
func (qp *QP) queueWaits(p wire.Packet) bool {
	return qp.readWaits(p) && p.BTH().PSN().Diff(qp.resp.psn) < 0
}

// streamRead sends READ response packets — FIRST/MIDDLE/LAST or ONLY by
// position — while the pacer and budget allow, and returns how many. The
// key is checked again for every packet, so a region deregistered
// mid-read ends it with a NAK.
func (qp *QP) streamRead(now instant, budget int) int {
	r, sent, pace := &qp.resp.read, &qp.resp.sent, &qp.resp.pace
	if sent.loss {
		sent.loss = false
		pace.loss(now, sent.lossPSN, qp.mtu)
	}
	if qp.resp.fresh {
		// A new READ with every stream before it sent (pace_start.go).
		qp.resp.fresh = false
		pace.confirm(now)
		pace.startLong(r.length, qp.env.Dst.IsLoopback())
	}
	n := 0
	for ; r.active && (n < budget || qp.readJoins()) && pace.ready(now) && qp.ccAllows(now); n++ {
		pace.begin(now, r.psn)
		pos, size := r.next(qp.mtu)
		f := qp.bth(readResponseOpcodes[pos], r.psn)
		// A payload of gatherMin or more is sent from the region, as the
		// requester sends one: the batch lays out only the packet's head.
		gather, elided := size >= gatherMin, 0
		if gather {
			elided = int(size)
		}
		p := qp.xmit.startHead(qp, &f, int(size), gather)
		if h := p.AETH(); h != nil {
			h.Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: r.msn})
		}
		crc := p.StartICRCElided(&qp.env, elided)
		var ref mem.Ref
		if size > 0 {
			var o respOutcome
			if ref, o = qp.remote(r.rkey, r.va+uint64(r.off), size, ib.AccessRemoteRead); o != respDone {
				qp.xmit.abort()
				r.active = false
				qp.respFail(o, r.reqPSN)
				if qp.trace != nil {
					qp.traceResp(wire.RCReadRequest, r.reqPSN, o)
				}
				return n
			}
		}
		if gather {
			crc.Write(ref.Bytes())
			p.SealICRCState(crc)
			qp.xmit.queueGathered(qp, p, ref)
		} else {
			crc.Copy(p.Payload(), ref.Bytes())
			ref.Release()
			p.SealICRCState(crc)
			qp.xmit.queueSealed(qp, p)
		}
		pace.spend(len(p) + elided)
		qp.resp.res[r.res].sentIn, qp.resp.res[r.res].sent = sent.epoch, true
		qp.countResponse(r.psn)
		r.off += size
		r.started = true
		r.psn = r.psn.Next()
		if pos == posLast || pos == posOnly {
			r.active = false
			if qp.resp.readQ.n > 0 {
				*r = qp.resp.readQ.pop()
			} else {
				pace.idle()
			}
			qp.answerPassed()
		}
	}
	return n
}

// readJoins reports whether the READ stream's next response packet would
// join the run the transmit batch ends with (see extends): past its
// budget a turn sends it. A 64 KiB READ's responses then go as runs of a
// Last, the next First and a Middle, and of 13 Middles.
func (qp *QP) readJoins() bool {
	pos, size := qp.resp.read.next(qp.mtu)
	return qp.xmit.joins(wire.PacketLen(readResponseOpcodes[pos], int(size)))
}

// next returns the message position and payload length of the stream's
// next response packet.
func (r *readStream) next(mtu uint32) (pos position, size uint32) {
	resid := r.length - r.off
	return positionOf(r.started, resid, mtu), min(resid, mtu)
}

// countResponse notes the READ response psn sent, counting it as
// retransmitted if a response at or past it was sent before.
func (qp *QP) countResponse(psn wire.PSN) {
	s, next := &qp.resp.sent, psn.Next()
	switch {
	case !s.valid:
		s.valid, s.max = true, next
	case psn.Less(s.max):
		qp.dev.counters.inc(RetransmittedPkts)
	default:
		s.max = next
	}
}

// respAtomic executes COMPARE SWAP or FETCH ADD with a CPU atomic on the
// target and answers with the original value.
func (qp *QP) respAtomic(p wire.Packet, psn wire.PSN) respOutcome {
	if qp.attr.AccessFlags&ib.AccessRemoteAtomic == 0 || len(qp.resp.res) == 0 {
		return errInvalidRequest
	}
	a := p.AtomicETH()
	if a.VA()%8 != 0 {
		return errInvalidRequest // misaligned atomic (doc/protocol.md §9, §12.3 step 11)
	}
	ref, o := qp.remote(a.RKey(), a.VA(), 8, ib.AccessRemoteAtomic)
	if o != respDone {
		return o
	}
	var orig uint64
	if p.Opcode() == wire.RCCompareSwap {
		orig = mem.CompareAndSwap(ref.Bytes(), a.Compare(), a.SwapAdd())
	} else {
		orig = mem.FetchAndAdd(ref.Bytes(), a.SwapAdd())
	}
	ref.Release()
	res := qp.takeResource()
	*res = resource{kind: wire.OpAtomic, first: psn, last: psn, va: a.VA(), rkey: a.RKey(), length: 8, orig: orig}
	qp.resp.msn++
	qp.resp.psn = psn.Next()
	qp.sendAtomicACK(psn, orig)
	return respDone
}

func (qp *QP) sendAtomicACK(psn wire.PSN, orig uint64) {
	qp.sendPendingACK()
	f := qp.bth(wire.RCAtomicAcknowledge, psn)
	p := qp.xmit.start(qp, &f, 0)
	p.AETH().Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: qp.resp.msn})
	p.AtomicAckETH().SetOrigData(orig)
	qp.xmit.queue(qp, p)
}

// takeResource returns the next responder resource slot, overwriting the
// oldest.
func (qp *QP) takeResource() *resource {
	r := &qp.resp
	res := &r.res[r.resNext]
	r.resNext = (r.resNext + 1) % len(r.res)
	return res
}
