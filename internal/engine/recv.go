package engine

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// inPkt is a received packet waiting in a QP's inbound ring: p, in a
// packet buffer of its own (buf) or a view of a coalesced receive (rx), or
// a short packet copied into the slot itself (n bytes of short). The
// buffer, or the reference, belongs to the ring slot until the QP's turn
// frees it.
type inPkt struct {
	p     wire.Packet
	buf   *pktBuf
	rx    *rxBuf
	n     uint8
	short [shortMax]byte
}

// shortMax is the longest packet its inbound slot holds: an ACK (20
// bytes), an atomic ACK (28), a READ request (32), a WRITE ONLY of up to
// 32 bytes, an atomic request (44). Such a packet, the whole of a latency
// test's traffic, is copied on arrival, which costs less than pinning a
// coalesced receive's buffer and taking a fresh one from the pool (two
// pool operations and four atomic counts a packet).
const shortMax = 64

func (p *inPkt) packet() wire.Packet {
	if p.n > 0 {
		return p.short[:p.n]
	}
	return p.p
}

// free lets go of the packet's buffer.
func (p *inPkt) free() {
	if p.buf != nil {
		putBuf(p.buf)
	}
	if p.rx != nil {
		p.rx.unref()
	}
	p.p, p.buf, p.rx, p.n = nil, nil, nil, 0
}

// recvLoop reads batches from the link, checks each packet (doc/protocol.md
// §1.4) and queues it on its QP. Every rejected packet is dropped and
// counted; none is answered.
func (d *Device) recvLoop() {
	defer d.wg.Done()
	if cr, ok := d.bind.(conn.CoalescedReceiver); ok && cr.Coalesces() {
		d.recvCoalesced(cr)
		return
	}
	n := d.bind.BatchSize()
	msgs := make([]conn.Message, n)
	bufs := make([]*pktBuf, n)
	for i := range msgs {
		bufs[i] = getBuf()
		msgs[i].Buf = bufs[i].b[:]
	}
	ready := make([]*QP, 0, n)
	for {
		got, err := d.bind.Recv(msgs)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				d.linkDown()
				return
			}
			continue
		}
		d.rxGate.Lock() // the rings' producer holds it (shrink.go)
		for i := range got {
			qp := d.accept(&msgs[i], true)
			if qp == nil {
				continue
			}
			if qp.kind.grh {
				in := d.datagram(&msgs[i], &qp.rxEnv)
				ready = d.enqueue(qp, &in, ready)
				continue
			}
			if msgs[i].N <= shortMax {
				ready = d.enqueueShort(qp, msgs[i].Buf[:msgs[i].N], ready)
				continue
			}
			ready = d.enqueue(qp, &inPkt{p: wire.Packet(msgs[i].Buf[:msgs[i].N]), buf: bufs[i]}, ready)
			bufs[i] = getBuf()
			msgs[i].Buf = bufs[i].b[:]
		}
		d.rxGate.Unlock()
		ready = scheduleReady(ready)
	}
}

// recvCoalescedBatch is how many coalesced receives one call fills: the
// most a UDPBind takes per call with GRO on (up to a thousand MTU-sized
// packets, more than a turn handles).
const recvCoalescedBatch = 16

// A coalesced receive's packets are queued as views of its 64 KiB buffer
// while the receive loop has fewer than rxPinBudget buffers out (16 MiB,
// about what one full inbound ring of packet buffers holds), or when the
// receive holds at least rxPinMin bytes, so that each packet pins at most
// twice its size. Other receives (a lone packet, a short run, with many
// buffers out) are copied into packet buffers: queued packets of a stalled
// QP cannot hold many times their size.
const rxPinMin = conn.MaxDatagram / 2

// rxPinBudget is a variable so that tests can take the copying path.
var rxPinBudget int32 = 256

// recvCoalesced is recvLoop over a link that coalesces receives: each
// buffer takes a run of packets, which are checked and queued as views of
// it (rxBuf), so that the responder's placement into memory is the only
// copy after the kernel's (issue 10, "one copy per side"). Over a link
// that shares its receiving (conn.SharedReceiver), the loop holds the
// device's receive gate while it receives and queues, and the link lets
// go of it while the loop waits, so that a poller can receive meanwhile
// (Progress).
func (d *Device) recvCoalesced(cr conn.CoalescedReceiver) {
	rb := newRxBatch()
	for {
		d.rxGate.Lock()
		got, err := cr.RecvCoalesced(rb.msgs)
		if err == nil {
			d.queueBatch(rb, got)
		}
		d.rxGate.Unlock()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				d.linkDown()
				return
			}
			continue
		}
		rb.ready = scheduleReady(rb.ready)
	}
}

// rxBatch is the state of one receiver of coalesced runs: its messages,
// the buffers under them, how many buffers it has out, and the QPs its
// last batch queued packets on.
type rxBatch struct {
	msgs  []conn.Message
	bufs  []*rxBuf
	inUse *atomic.Int32
	ready []*QP
}

func newRxBatch() *rxBatch {
	rb := &rxBatch{
		msgs:  make([]conn.Message, recvCoalescedBatch),
		bufs:  make([]*rxBuf, recvCoalescedBatch),
		inUse: new(atomic.Int32),
		ready: make([]*QP, 0, recvCoalescedBatch),
	}
	for i := range rb.msgs {
		rb.bufs[i] = getRxBuf(rb.inUse)
		rb.msgs[i].Buf = rb.bufs[i].b[:]
	}
	return rb
}

// queueBatch checks the packets of the first got messages of rb and
// queues each on its QP, adding the QP to rb.ready.
func (d *Device) queueBatch(rb *rxBatch, got int) {
	for i := range got {
		m := &rb.msgs[i]
		pin := m.N >= rxPinMin || rb.inUse.Load() < rxPinBudget
		for j := range m.Datagrams() {
			dg := m.Datagram(j)
			if dg.N > pktBufSize {
				// Longer than any packet of a valid MTU: what a
				// link into packet buffers truncates and drops.
				d.counters.inc(DropMalformed)
				continue
			}
			qp := d.accept(&dg, j == 0)
			if qp == nil {
				continue
			}
			if qp.kind.grh {
				in := d.datagram(&dg, &qp.rxEnv)
				rb.ready = d.enqueue(qp, &in, rb.ready)
				continue
			}
			if dg.N <= shortMax {
				rb.ready = d.enqueueShort(qp, dg.Buf, rb.ready)
				continue
			}
			if pin {
				rb.bufs[i].ref()
				rb.ready = d.enqueue(qp, &inPkt{p: wire.Packet(dg.Buf), rx: rb.bufs[i]}, rb.ready)
				continue
			}
			b := getBuf()
			n := mem.Place(b.b[:], dg.Buf)
			rb.ready = d.enqueue(qp, &inPkt{p: wire.Packet(b.b[:n]), buf: b}, rb.ready)
		}
		if pin && rb.bufs[i].refs.Load() > 1 {
			// Queued packets hold the buffer now; take a fresh
			// one for the next receive.
			rb.bufs[i].unref()
			rb.bufs[i] = getRxBuf(rb.inUse)
			m.Buf = rb.bufs[i].b[:]
		}
	}
}

// enqueue queues p on qp's inbound ring, or frees it and counts the drop
// if the ring is full, and returns ready with qp on it. (p is a pointer so
// that the 112-byte slot type, whose short bytes stay unused here, is not
// copied whole into the call.)
func (d *Device) enqueue(qp *QP, p *inPkt, ready []*QP) []*QP {
	slot := d.reserve(qp)
	if slot == nil {
		p.free()
		return ready
	}
	slot.p, slot.buf, slot.rx = p.p, p.buf, p.rx // a freed slot's n is 0
	return commit(qp, ready)
}

// enqueueShort is enqueue of a packet of at most shortMax bytes, copied
// into its slot.
func (d *Device) enqueueShort(qp *QP, b []byte, ready []*QP) []*QP {
	slot := d.reserve(qp)
	if slot == nil {
		return ready
	}
	slot.n = uint8(copy(slot.short[:], b))
	return commit(qp, ready)
}

// reserve returns qp's next free inbound slot, growing the ring up to
// inboundDepth, or nil, the drop counted.
func (d *Device) reserve(qp *QP) *inPkt {
	slot := qp.inbound.Reserve()
	if slot == nil && qp.inbound.Cap() < inboundDepth {
		// The ring's consumer, the QP's turn, runs under mu, and this is
		// its one producer: whoever holds the receive gate, the receive
		// loop or over a shared link Progress. No holder of mu waits on
		// the gate (a turn that shrinks the ring only tries it), so the
		// wait here is at most one turn's; that turn may have drained
		// the ring meanwhile.
		qp.mu.Lock()
		if qp.inbound.Reserve() == nil {
			qp.inbound.Grow()
			qp.inWideAt = monoNow()
		}
		qp.mu.Unlock()
		slot = qp.inbound.Reserve()
	}
	if slot == nil {
		d.counters.inc(DropRxOverflow)
	}
	return slot
}

// commit publishes the slot reserve returned and returns ready with qp
// on it.
func commit(qp *QP, ready []*QP) []*QP {
	qp.inbound.Commit()
	if !contains(ready, qp) {
		ready = append(ready, qp)
	}
	return ready
}

// scheduleReady schedules each QP a batch queued packets on and returns
// the emptied list.
func scheduleReady(ready []*QP) []*QP {
	for i, qp := range ready {
		qp.task.schedule()
		ready[i] = nil
	}
	return ready[:0]
}

func contains(qps []*QP, qp *QP) bool {
	for _, q := range qps {
		if q == qp {
			return true
		}
	}
	return false
}

// accept runs the receive checks on one datagram and returns the QP it is
// for, or nil after counting why it was dropped. It leaves the datagram's
// envelope, as the ICRC check found it, in the QP's rxEnv. first says that
// the datagram starts a run: it came alone, or first of a coalesced
// receive's.
func (d *Device) accept(m *conn.Message, first bool) *QP {
	p := wire.Packet(m.Buf[:m.N])
	if p.Validate() != nil {
		d.counters.inc(DropMalformed)
		return nil
	}
	// The header checks come before the ICRC, as rxe orders them: they cost a
	// few loads, the ICRC a pass over the packet, so a flood for other
	// QPs or from a stranger is dropped cheaply (doc/protocol.md §1.4).
	bth := p.BTH()
	qp := d.lookupQP(bth.DestQP())
	if qp == nil {
		d.counters.inc(DropUnknownQP)
		return nil
	}
	if bth.Opcode() == wire.CNP {
		d.takeCNP(qp, m.Addr) // congestion control (cc.go), not a request or response
		return nil
	}
	if bth.Opcode().Transport() != qp.kind.transport {
		d.counters.inc(DropWrongTransport)
		return nil
	}
	if !stateAccepts(qp.State(), p) {
		d.counters.inc(DropQPState)
		return nil
	}
	if !pkeyMatches(bth.PKey()) {
		d.counters.inc(DropBadPKey)
		return nil
	}
	if qp.kind.connected {
		if !fromPeer(qp.peer.Load(), m.Addr) {
			d.counters.inc(DropWrongSource)
			return nil
		}
	} else if c := qp.admitsDatagram(p); c != numCounters {
		d.counters.inc(c)
		return nil
	}
	env := &qp.rxEnv
	if env.Src != m.Addr.Addr() || env.SrcPort != m.Addr.Port() {
		// A new peer (a datagram QP's sources come and go): its
		// envelope is prepared once for the packets that follow.
		*env = envelope(m.Addr, d.local)
	}
	if !icrcOK(p, env, m, &qp.rxRunID, first) {
		d.counters.inc(DropBadICRC)
		return nil
	}
	d.counters.inc(RcvdPkts)
	d.noteECN(qp, m)
	return qp
}

// icrcOK checks the ICRC. A link that knows the IPv4 ID (memconn) says so;
// a UDP socket does not, and then one CRC pass checks 0 (what an
// unconnected DF socket sends alone) and the two IDs of ipidGuesses;
// otherwise it solves for the ID from the trailer: Linux rxe numbers its
// datagrams (see wire.CheckICRCGuessIPID). env.IPID is then the ID found,
// and *run too if first says the datagram starts a run and it checks.
func icrcOK(p wire.Packet, env *wire.Envelope, m *conn.Message, run *uint16, first bool) bool {
	if m.HasIPID || !env.IPv4() {
		env.IPID = m.IPID
		return p.CheckICRC(env) == nil
	}
	guess, alt := ipidGuesses(env.IPID, *run, first)
	id, err := p.CheckICRCGuessIPID(env, guess, alt)
	env.IPID = id
	if first && err == nil {
		*run = id
	}
	return err == nil
}

// ipidGuesses returns the IPv4 IDs a peer's next datagram most likely
// carries, given the ID of the last one received from it and of the first
// of the last run: the one after the last, as a flow's single sends
// (conn.FlowOpener) and rxe's datagrams count up, and as the segments of a
// run do; and, for a datagram that starts a run, the one after the last
// run's first: a GSO send takes one ID from its flow's count and its
// segments number on from it (conn.UDPBind.PlanIPIDs), so the runs of a
// stream overlap: a ping-pong's answer and ACK, sent as a run of two,
// and both runs of every 64 KiB WRITE went unguessed, and solving for the
// ID costs half as much again as the check of a guess
// (wire.BenchmarkCheckICRCGuessIPID, 8-byte WRITE: 64 → 95 ns).
func ipidGuesses(last, run uint16, first bool) (guess, alt uint16) {
	guess, alt = last+1, last+1
	if first {
		alt = run + 1
	}
	return guess, alt
}

// stateAccepts applies the QP-state rule rxe applies on receive: requests need RTR
// or later, responses RTS or later, and a QP in ERR takes nothing.
func stateAccepts(st ib.QPState, p wire.Packet) bool {
	min := ib.QPStateRTS
	if p.Info().Is(wire.OpRequest) {
		min = ib.QPStateRTR
	}
	return st >= min && st != ib.QPStateErr
}

// pkeyMatches applies the P_Key rule against the default key 0xFFFF
// (IBA 10.9.3, rxe pkey_match): the low 15 bits are equal and non-zero, and
// one of the two keys is a full member.
func pkeyMatches(k uint16) bool {
	const def = 0xffff
	return k&0x7fff != 0 && k&0x7fff == def&0x7fff
}

// fromPeer reports whether a packet from src comes from the connected
// peer (doc/protocol.md §1.2, §1.4). A peer on the RoCEv2 port is a host
// of its own, which sends from per-QP source ports (rxe: 0xC000 + a hash),
// so only its address is compared. A peer on another port is a device
// that shares its host with others, told apart by that port, from which
// it also sends: there the port must match too, or any process on the
// peer's host could write into the connection.
func fromPeer(peer *netip.AddrPort, src netip.AddrPort) bool {
	if peer == nil || peer.Addr() != src.Addr() {
		return false
	}
	return peer.Port() == wire.UDPPort || peer.Port() == src.Port()
}
