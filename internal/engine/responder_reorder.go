package engine

import (
	"github.com/goverbs/goverbs/internal/wire"
)

// stashSlots is how far ahead of the expected PSN a SEND or WRITE packet
// may arrive and be held for its turn instead of starting a go-back-N
// (doc/protocol.md §6.3): a network that reorders (ECMP, netem) moves a
// packet ahead of the few sent in the next millisecond.
const stashSlots = 32

// stash holds SEND and WRITE packets that arrived ahead of the expected
// PSN, each in the slot of its PSN modulo stashSlots; a slot's buffer is
// made at its first use and kept. Owned by the QP's turn.
type stash struct {
	slot [stashSlots]struct {
		psn  wire.PSN
		full bool
		buf  []byte
	}
	n int // slots full
}

// put copies p, of PSN psn, into its slot, replacing what the slot held.
func (s *stash) put(psn wire.PSN, p wire.Packet) {
	e := &s.slot[uint32(psn)%stashSlots]
	if cap(e.buf) < len(p) {
		e.buf = make([]byte, 0, pktBufSize)
	}
	if !e.full {
		s.n++
	}
	e.psn, e.full, e.buf = psn, true, append(e.buf[:0], p...)
}

// peek returns the packet of PSN psn, if one is held.
func (s *stash) peek(psn wire.PSN) wire.Packet {
	e := &s.slot[uint32(psn)%stashSlots]
	if !e.full || e.psn != psn {
		return nil
	}
	return wire.Packet(e.buf)
}

// take returns the packet of PSN psn, if one is held, and frees its slot;
// the packet stays valid until the slot is filled again.
func (s *stash) take(psn wire.PSN) wire.Packet {
	p := s.peek(psn)
	if p != nil {
		s.slot[uint32(psn)%stashSlots].full = false
		s.n--
	}
	return p
}

// clear empties every slot, keeping the buffers.
func (s *stash) clear() {
	for i := range s.slot {
		s.slot[i].full = false
	}
	s.n = 0
}

// respAhead handles a request past the expected PSN: a packet went
// missing, or was overtaken. A request within stashSlots is held for its
// turn; unless it is a SEND or WRITE packet that asks for an ACK, the
// requester is not told yet, since the missing packets may only be late:
// the stall NAK (probe.go) tells it if they do not come. A READ or atomic
// asks for an ACK too, but its answer is the response it waits for, which
// comes in its turn; a network that reorders moves READ requests ahead
// (memconn, netem), and a NAK for each made the requester ask every READ
// after the gap again. Anything else sends the one PSN sequence NAK of
// the gap (IBA 9.7.5.2), after which further packets are dropped or held
// quietly until the expected one comes.
func (qp *QP) respAhead(p wire.Packet, psn wire.PSN, d int32, now instant) respOutcome {
	r := &qp.resp
	qp.dev.counters.inc(OutOfSeqRequest)
	r.lost = true
	info := p.Info()
	readAtomic := info.Is(wire.OpRead) || info.Is(wire.OpAtomic)
	held := d <= stashSlots && (info.Is(wire.OpSend) || info.Is(wire.OpWrite) || readAtomic)
	if held {
		r.stash.put(psn, p)
	}
	switch {
	case r.sentNAK && held:
		return respHeld
	case r.sentNAK:
		return respSeqDrop
	case held && (readAtomic || !p.BTH().AckRequest()):
		return respHeld
	}
	r.sentNAK, r.nakAt = true, now
	qp.sendACK(wire.NAKSyndrome(wire.NAKPSNSequenceError), r.psn)
	qp.dev.counters.inc(NAKSent)
	return respSeqNAK
}

// replayStash executes the held packets that are now in order, and
// reports whether it executed any. A request must not overtake the
// responses of a READ stream, nor a READ a full queue of them
// (readWaits): one that would stays held until the turn finds the stream
// done (QP.turn).
func (qp *QP) replayStash() (ran bool) {
	for {
		p := qp.resp.stash.peek(qp.resp.psn)
		if p == nil || qp.readWaits(p) {
			return ran
		}
		qp.resp.stash.take(qp.resp.psn)
		qp.respondInOrder(p, qp.resp.psn)
		ran = true
	}
}

// holdBehindStream holds a request at or past the expected PSN that may
// not overtake the READ streams (readWaits) in the stash, for its turn
// when they end (replayStash). One past the expected PSN is out of
// sequence as in respAhead, but draws no NAK, which would overtake the
// streams too: the stall NAK asks for the gap if nothing fills it. One
// further ahead than the stash reaches is dropped, as it would be after
// the streams; waiting in the inbound queue instead, the rest of a long
// SEND behind a READ kept the requester's resends behind it from the
// responder until its retry_cnt ran out (TestSoak -soak).
func (qp *QP) holdBehindStream(p wire.Packet, psn wire.PSN, d int32) respOutcome {
	if d > 0 {
		qp.dev.counters.inc(OutOfSeqRequest)
		qp.resp.lost = true
	}
	if d >= stashSlots {
		return respSeqDrop
	}
	qp.resp.stash.put(psn, p)
	return respBehind
}
