package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/queue"
	"github.com/goverbs/goverbs/internal/wire"
)

// inboundDepth is how many received packets a QP queues before the receive
// loop drops (a NIC's receive ring). The ring starts at inboundStart and
// doubles when a burst fills it (Device.enqueue): a QP that never sees
// one holds 64 slots, not 4096 (160 KiB of a connected QP's 210 did when
// a slot was 40 bytes; 448 KiB at 112, with room for a short packet), and
// one that saw one shrinks back when quiet (shrink.go).
const (
	inboundDepth = 4096
	inboundStart = 64
)

// QP is a queue pair.
//
// Fields are grouped by who may touch them: the immutable ones are set at
// creation; state and peer are atomics read by the receive path and posts;
// the rings are single-producer/single-consumer (posts produce under
// sqMu/rqMu, turns consume); everything below mu is owned by the QP's turn
// and by control operations, which both hold mu.
type QP struct {
	dev      *Device
	qpn      uint32
	typ      ib.QPType
	kind     *qpKind // what the transport service changes (qpkind.go)
	pd       uint32
	sendCQ   *CQ
	recvCQ   *CQ
	cap      QPCap
	sqSigAll bool
	srq      *SRQ // receive WQEs come from it, if set
	task     task
	// owing is set while the QP is owed a turn (Device.owe): a turn
	// Progress ran ended for the poller to answer, and none has run
	// since. The turn that runs next clears it, and SettleOwed then
	// schedules no other.
	owing atomic.Bool

	state atomic.Uint32                  // ib.QPState
	peer  atomic.Pointer[netip.AddrPort] // where packets go; set at RTR (connected services)
	qkey  atomic.Uint32                  // the Q_Key UD packets must carry (attr.QKey)

	sqMu    sync.Mutex
	sq      *queue.Ring[sendWQE]
	rqMu    sync.Mutex
	rq      *queue.Ring[recvWQE]
	inbound *queue.Ring[inPkt]

	mu        sync.Mutex
	attr      QPAttr
	env       wire.Envelope // of outgoing packets, prepared (wire.Envelope.Prepare)
	flow      int           // the link's flow to the peer (conn.FlowOpener), 0 for none; set at RTR
	rxEnv     wire.Envelope // of the datagrams accepted for the QP, prepared; the receive loop's (accept)
	rxRunID   uint16        // IPv4 ID of the first packet of the last run received (ipidGuesses); the receive loop's
	mtu       uint32        // path MTU in bytes
	req       requester
	comp      completer
	resp      responder
	trace     TraceFunc // nil unless tracing (SetTrace)
	events    qpEvents
	xmit      xmitBatch
	timerAt   instant // deadline registered with the device timer
	inWideAt  instant // when the inbound ring last held or grew past its start (shrink.go)
	destroyed bool

	// cc is the congestion control (cc.go): owned by the turn, but for
	// the counts of CNPs and marks, atomics the receive loop adds to.
	cc congestion

	// closed is set, holding sqMu and rqMu, when the QP is destroyed or
	// its device closes; posts check it under their queue lock, so a post
	// either lands before the flush or fails with ErrClosed.
	closed atomic.Bool
}

// Errors of QP verbs. Posting errors are sentinels; PostSend and PostRecv
// return them with the index of the request of a chain that failed.
var (
	ErrQPState         = errors.New("QP state does not allow this")
	ErrQueueFull       = errors.New("work queue full")
	ErrTooManySGE      = errors.New("too many scatter/gather elements")
	ErrBadOpcode       = errors.New("opcode not supported on this QP")
	ErrMessageSize     = errors.New("message larger than the maximum")
	ErrAtomicLength    = errors.New("atomic operation needs exactly 8 bytes")
	ErrAtomicAlign     = errors.New("atomic remote address not 8-byte aligned")
	ErrInlineSize      = errors.New("inline data larger than max_inline_data")
	ErrInlineOpcode    = errors.New("inline data only with SEND and RDMA WRITE")
	ErrInlineAccess    = errors.New("inline data outside a registered region")
	ErrInvalidSGE      = errors.New("SGE with lkey 0, which names no memory region")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrNotSupported    = errors.New("not supported")
	ErrBadCapability   = errors.New("QP capability out of range")
)

// errQPStateIn[s] is ErrQPState saying the QP was in state s when it
// refused a post, made once, so that a refusal allocates nothing.
var errQPStateIn = func() (e [ib.QPStateErr + 1]error) {
	for s := range e {
		e[s] = fmt.Errorf("%w: the QP is in %v", ErrQPState, ib.QPState(s))
	}
	return e
}()

// CreateQP creates a QP in the RESET state in protection domain pd.
func (d *Device) CreateQP(pd uint32, init *QPInitAttr) (*QP, error) {
	kind := kindOf(init.Type)
	switch {
	case init.Type == 0:
		return nil, fmt.Errorf("%w: QPInitAttr.Type is not set (RC, UC or UD)", ErrInvalidArgument)
	case kind == nil:
		return nil, fmt.Errorf("type %v: %w", init.Type, ErrNotSupported)
	}
	if init.SendCQ == nil || init.RecvCQ == nil {
		return nil, fmt.Errorf("%w: send and receive CQs are required", ErrInvalidArgument)
	}
	// A QP completes into its own device's CQs only: a CQ of another
	// device would keep receiving completions after that device closed.
	if init.SendCQ.dev != d || init.RecvCQ.dev != d {
		return nil, fmt.Errorf("%w: CQ belongs to another device", ErrInvalidArgument)
	}
	if init.SendCQ.closed.Load() || init.RecvCQ.closed.Load() {
		return nil, fmt.Errorf("CQ: %w", ErrClosed)
	}
	c := init.Cap
	if s := init.SRQ; s != nil {
		if s.dev != d {
			return nil, fmt.Errorf("%w: SRQ belongs to another device", ErrInvalidArgument)
		}
		if s.closed.Load() {
			return nil, fmt.Errorf("SRQ: %w", ErrClosed)
		}
		c.MaxRecvWR, c.MaxRecvSGE = 1, s.maxSGE // its own receive queue stays empty
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	c.MaxSendSGE = max(c.MaxSendSGE, 1)
	c.MaxRecvSGE = max(c.MaxRecvSGE, 1)
	qp := &QP{
		dev: d, typ: init.Type, kind: kind, pd: pd, sendCQ: init.SendCQ, recvCQ: init.RecvCQ,
		sqSigAll: init.SQSigAll,
		srq:      init.SRQ,
		sq:       queue.New[sendWQE](int(c.MaxSendWR)),
		rq:       queue.New[recvWQE](int(c.MaxRecvWR)),
		inbound:  queue.New[inPkt](inboundStart),
	}
	// Report the rounded-up queue sizes, as providers do.
	c.MaxSendWR, c.MaxRecvWR = uint32(qp.sq.Cap()), uint32(qp.rq.Cap())
	qp.cap = c
	if init.SRQ != nil {
		qp.cap.MaxRecvWR, qp.cap.MaxRecvSGE = 0, 0 // ibv_query_qp reports none
	}
	for i := range qp.sq.Cap() {
		w := qp.sq.At(uint32(i))
		w.sge = make([]SGE, 0, c.MaxSendSGE)
		w.inline = make([]byte, 0, c.MaxInlineData)
	}
	for i := range qp.rq.Cap() {
		qp.rq.At(uint32(i)).sge = make([]SGE, 0, c.MaxRecvSGE)
	}
	qp.resp.wqe.sge = make([]SGE, 0, c.MaxRecvSGE)
	qp.cc.on = d.congestion
	qp.xmit.init(d.bind.BatchSize())
	qp.task.turn = qp.turn
	qp.task.handoff = qp.handoff
	qp.attr.PathMTU = ib.MTU256 // the default until RTR (rxe)
	qp.attr.PortNum = 1
	if err := d.addQP(qp); err != nil {
		return nil, err
	}
	return qp, nil
}

// QPN returns the QP number.
func (qp *QP) QPN() ib.QPN { return ib.QPN(qp.qpn) }

// Type returns the QP's transport service type.
func (qp *QP) Type() ib.QPType { return qp.typ }

// State returns the current state.
func (qp *QP) State() ib.QPState { return ib.QPState(qp.state.Load()) }

// Cap returns the QP's capacities as created (queue sizes rounded up).
func (qp *QP) Cap() QPCap { return qp.cap }

// Query returns the current attributes.
func (qp *QP) Query() QPAttr {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	a := qp.attr
	a.State = qp.State()
	a.CurState = a.State
	a.Cap = qp.cap
	a.SQDraining = a.State == ib.QPStateSQD && qp.oldest() != nil
	return a
}

// handoff continues the QP's task on the device worker, or here if the
// worker's backlog is full.
func (qp *QP) handoff() {
	select {
	case qp.dev.worker <- qp:
	default:
		qp.task.loop(-1)
	}
}

// Destroy removes the QP: it receives nothing more, its work requests are
// dropped without completions (ibv_destroy_qp), and later posts fail with
// ErrClosed. Destroying it again does nothing.
func (qp *QP) Destroy() {
	qp.dev.removeQP(qp)
	qp.dev.timers.remove(qp)
	qp.shutdown(false)
}

// Closed reports whether the QP was destroyed or its device closed.
func (qp *QP) Closed() bool { return qp.closed.Load() }

// shutdown stops the QP and frees queued packets. With flush, what the
// queues hold completes with WR_FLUSH_ERR first, as when the QP enters the
// error state (IBA 10.3.1): that is what a closing device owes the work
// posted to it; a destroyed QP owes nothing.
func (qp *QP) shutdown(flush bool) {
	qp.sqMu.Lock()
	qp.rqMu.Lock()
	qp.closed.Store(true)
	qp.rqMu.Unlock()
	qp.sqMu.Unlock()
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.destroyed {
		return
	}
	qp.settle()
	qp.destroyed = true
	qp.state.Store(uint32(ib.QPStateErr))
	if flush {
		qp.flush()
	}
	qp.dropInbound()
	qp.xmit.discard()
	qp.dev.timers.remove(qp) // a turn that ran before may have re-armed it
}

// settle sends what a turn that ended for a poller (turnYield) left owed:
// the ACK of the requests it executed and what it queued. The poller may
// have seen those requests' effects and gone on to modify, destroy or close
// (ibv_rc_pingpong's last iteration does), but the peer counts on the ACK
// as from a responder that acknowledges on arrival. Called with mu held,
// before the QP changes state or stops; over a link already closed the
// send fails and is counted.
func (qp *QP) settle() {
	qp.sendPendingACK()
	qp.xmit.flush(qp)
}

// dropInbound frees every queued received packet. Called with mu held.
func (qp *QP) dropInbound() {
	for p := qp.inbound.Peek(); p != nil; p = qp.inbound.Peek() {
		p.free()
		qp.inbound.Pop()
	}
}

// turn is one bounded step of the QP's work: received packets, timers, the
// requester, then the coalesced ACK and the transmit batch.
func (qp *QP) turn() turnEnd {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.owing.Load() { // a store is an atomic exchange, even of what is there
		qp.owing.Store(false)
	}
	if qp.destroyed {
		return turnDone
	}
	now := monoNow()
	qp.noteInbound(now)
	armed := qp.comp.deadline
	budget := turnBudget
	executed := false // a request ran: a poller may answer it
	for budget > 0 && qp.State() != ib.QPStateErr {
		if qp.resp.read.active {
			n := qp.streamRead(now, budget)
			if qp.replayStash() {
				qp.resp.rx = true // held requests the stream kept waiting ran
			}
			if n > 0 || !qp.resp.read.active {
				budget -= n
				continue
			}
			// Paced: meanwhile take what may pass the stream.
		}
		in := qp.inbound.Peek()
		if in == nil {
			break
		}
		p := in.packet()
		if qp.queueWaits(p) {
			break
		}
		budget--
		// The receive loop checked the state, but a Modify (to RESET,
		// say) may have come between its check and this turn.
		switch {
		case !stateAccepts(qp.State(), p):
			qp.dev.counters.inc(DropQPState)
		case p.Info().Is(wire.OpRequest):
			qp.kind.respond(qp, in, now)
			executed = true
		default:
			qp.complete(p, now)
		}
		in.free()
		qp.inbound.Pop()
	}
	if qp.resp.rx {
		qp.resp.rx = false
		qp.armStall(now)
	}
	if executed && qp.resp.ackPending && qp.inbound.Len() == 0 {
		// The requests just executed are often what a poller waits for
		// (ib_write_lat's spin on the written byte, a receive completion),
		// and its answer is a post. The turn ends here, its ACK still
		// pending, and the task yields the processor (task.loop): the
		// poller's post then finds the task idle and runs the next turn
		// itself, which sends the answer and the ACK in one flush, one
		// system call instead of two on the latency path, without a
		// second goroutine switch back to this one first. If nobody
		// posts, the task's owner takes the next turn after the yield.
		return turnYield
	}
	// Work is left if the budget ran out; otherwise the loop stopped at
	// an empty queue, a paced stream (the timer resumes it) or a request
	// waiting for the stream (its end resumes it).
	end := turnDone
	if budget <= 0 { // a READ stream may go past it (readJoins)
		end = turnMore
	}
	if qp.State() != ib.QPStateErr {
		qp.checkTimers(now)
		qp.congest(now)
	}
	if qp.resp.ackFirst {
		// A message completed a receive, and what the poller posts in
		// answer must not reach the peer before the ACK of that message:
		// a responder in hardware or rxe acknowledges on arrival, before
		// the completion can be seen, and peers count on it. perftest
		// 4.5's ib_send_lat -e, woken by the answer while it waits for
		// the ACK's completion, loses completion events and hangs
		// (doc/tools.md §2.9; on rxe in the lab, one run in six).
		qp.sendPendingACK()
	}
	if qp.State() != ib.QPStateErr && qp.kind.request(qp, now, turnBudget) {
		end = turnMore
	}
	qp.completeLocal() // mw.go
	qp.noteDrained()
	// Otherwise the coalesced ACK goes after the requests: an ACK is
	// shorter than a request, and a GSO run may end with one shorter
	// segment, so the answer and the ACK to the peer leave as one
	// datagram, which the loopback stack carries once and the peer's GRO
	// receive splits. ib_write_lat 8 B typical, pinned, paired runs on the
	// busy 2-core machine (with the doorbell rule of PostSend): medians
	// 10.1 → 8.6 µs, lower in 5 of 5; ib_send_lat 9.5 → 7.9 µs, 3 of 3
	// (its 2-byte SEND and the ACK are of one size, so they still form
	// one run with the ACK first).
	qp.sendPendingACK()
	if qp.State() == ib.QPStateErr {
		// Entered now, or work was posted while in it.
		qp.flush()
		end = turnDone
	}
	qp.xmit.flush(qp)
	if d := qp.comp.deadline; d != armed && !d.IsZero() {
		// The turn armed or pushed out the local ACK timeout with the
		// time it started, but what it sent went to the link only at
		// the flush: a stall in between (a loaded machine, the race
		// detector) would eat into the timeout and retry packets not
		// yet late. The timer runs from the transmission (IBA
		// 9.7.6.1.3), so re-read the clock once per turn that moved it;
		// starting it a turn later than an ACK came is harmless.
		now = monoNow()
		qp.comp.restartTimer(now, &qp.attr)
	}
	qp.shrink(now)
	qp.armTimer(now)
	return end
}

// turnBudget bounds the packets handled and sent in one turn. It is a
// multiple of 15, the full 4 KiB-MTU packets one GSO datagram holds
// (conn's 65 507 bytes), and below 62, those of a 1 KiB MTU, so that a
// turn's packets coalesce into whole runs: at 64, a stream of 4 KiB
// messages went to the kernel as 15+15+15+15+4 a turn; ib_write_bw 4 KiB
// made 11 % fewer datagrams at 60 (counted), 3.11 → 3.23 GB/s (alternated,
// pinned, medians of 5); 8 B and 64 KiB WRITEs unchanged. Past it a turn
// still sends what joins its last run (extends, readJoins).
const turnBudget = 60

// armTimer registers the QP's earliest deadline with the device timer:
// the local ACK timeout, a READ gap's reorder window, a tail probe or a
// stall NAK, the end of an RNR wait, or a paced READ stream's next send.
func (qp *QP) armTimer(now instant) {
	next := qp.comp.deadline
	if qp.State() != ib.QPStateErr {
		for _, r := range [...]instant{qp.comp.lossAt, qp.comp.probeAt, qp.resp.stallAt} {
			next = sooner(next, r) // a READ's gap outlives the reorder window, a tail probe, a stall NAK
		}
	}
	if r := qp.comp.rnrUntil; r.After(now) && qp.State() != ib.QPStateErr {
		next = sooner(next, r)
	}
	if qp.resp.read.active && qp.resp.pace.blocked() && qp.State() != ib.QPStateErr {
		next = sooner(next, qp.resp.pace.next())
	}
	next = sooner(next, qp.shrinkAt()) // a grown ring or batch, to give back once the QP is quiet
	if qp.cc.bucket.blocked() && (qp.resp.read.active || qp.req.cur != qp.sq.Tail()) && qp.State() != ib.QPStateErr {
		next = sooner(next, qp.cc.bucket.next()) // a send held back by the congestion-control rate
	}
	if next.IsZero() || (!qp.timerAt.IsZero() && !next.Before(qp.timerAt) && qp.timerAt.After(now)) {
		return
	}
	qp.timerAt = next
	qp.dev.timers.add(qp, next)
}
