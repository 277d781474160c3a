package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
)

// PostSend queues a chain of send work requests (ibv_post_send). It fails
// only for immediate faults: a closed QP, the QP state, a full queue, or a
// malformed request; everything else is reported by a completion. On
// failure bad is the position in the chain of the request that was not
// posted (those before it were) and err a sentinel, bare so that failing
// costs no allocation here; the verbs layer says which verb failed.
func (qp *QP) PostSend(wr *SendWR) (bad int, err error) {
	qp.sqMu.Lock()
	if qp.closed.Load() {
		qp.sqMu.Unlock()
		return 0, ErrClosed
	}
	if st := qp.State(); st < ib.QPStateRTS {
		qp.sqMu.Unlock()
		return 0, errQPStateIn[st]
	}
	prior := qp.sq.Len() > 0
	i := 0
	for ; wr != nil; wr, i = wr.Next, i+1 {
		if err = qp.checkSendWR(wr); err != nil {
			break
		}
		w := qp.sq.Reserve()
		if w == nil {
			err = ErrQueueFull
			break
		}
		if err = qp.fillSendWQE(w, wr); err != nil {
			break
		}
		qp.sq.Commit()
	}
	qp.sqMu.Unlock()
	switch {
	case i == 0:
	case prior:
		// Earlier WQEs are still in the queue, being sent or waiting for
		// their ACK, whose turn would send this one anyway: leave the
		// sending to a turn soon after, so that the posts made meanwhile
		// leave together, one GSO send of equal-size packets instead of
		// one system call per post (the doorbell batching of hardware
		// NICs). The worker's turn runs when this goroutine yields.
		// ib_write_bw over loopback, pinned, one batch on the busy 2-core
		// machine: 8 B 0.05-0.06 → 0.49-0.56 M msg/s (each WRITE had
		// left in a sendmmsg of its own), 4 KiB 0.25-0.29 → 0.93 GB/s.
		qp.task.kick()
	default:
		// A lone post (ping-pong latency) is sent now, inline.
		qp.task.schedule()
	}
	return i, err
}

// maxReadPSNs bounds the response packets of one READ.
const maxReadPSNs = 1<<22 - maxWindow

// checkSendWR validates a send WR against the QP, as rxe does at post time.
func (qp *QP) checkSendWR(wr *SendWR) error {
	if !qp.kind.allows(wr.Opcode) {
		return ErrBadOpcode
	}
	switch wr.Opcode {
	case ib.WRBindMW, ib.WRLocalInv:
		return checkMWOp(wr) // mw.go
	}
	if !qp.kind.connected {
		if err := qp.checkDatagramWR(wr); err != nil {
			return err
		}
	}
	if len(wr.SGList) > int(qp.cap.MaxSendSGE) {
		return ErrTooManySGE
	}
	if err := checkLKeys(wr.SGList); err != nil {
		return err
	}
	var n uint64
	for i := range wr.SGList {
		n += uint64(wr.SGList[i].Length)
	}
	if n > MaxMsgSize {
		return ErrMessageSize
	}
	// A READ takes one PSN per response packet; past half the 24-bit
	// space PSN order breaks down (doc/protocol.md §6.1), and the send
	// window must still fit.
	if wr.Opcode == ib.WRRDMARead && qp.mtu > 0 && n/uint64(qp.mtu) >= maxReadPSNs {
		return ErrMessageSize
	}
	if wr.Opcode == ib.WRAtomicCmpAndSwp || wr.Opcode == ib.WRAtomicFetchAndAdd {
		if n != 8 {
			return ErrAtomicLength
		}
		if wr.RemoteAddr%8 != 0 {
			return ErrAtomicAlign
		}
	}
	if wr.Flags&ib.SendInline != 0 {
		switch wr.Opcode {
		case ib.WRSend, ib.WRSendWithImm, ib.WRRDMAWrite, ib.WRRDMAWriteWithImm, ib.WRSendWithInv:
		default:
			return ErrInlineOpcode
		}
		if n > uint64(qp.cap.MaxInlineData) {
			return ErrInlineSize
		}
	}
	return nil
}

// fillSendWQE copies wr into the slot; inline data is copied now, so the
// caller may reuse its buffers when PostSend returns.
func (qp *QP) fillSendWQE(w *sendWQE, wr *SendWR) error {
	w.wrID, w.opcode, w.flags, w.imm = wr.WRID, wr.Opcode, wr.Flags, wr.Imm
	w.remoteAddr, w.rkey, w.compareAdd, w.swap = wr.RemoteAddr, wr.RKey, wr.CompareAdd, wr.Swap
	w.ah, w.remoteQPN, w.qkey = nil, uint32(wr.RemoteQPN), wr.RemoteQKey
	if wr.AH != nil {
		w.ah = *wr.AH
	}
	w.signaled = qp.sqSigAll || wr.Flags&ib.SendSignaled != 0
	w.state, w.status, w.sent = wqePosted, ib.WCSuccess, 0
	w.sge = append(w.sge[:0], wr.SGList...)
	w.length = 0
	for i := range w.sge {
		w.length += w.sge[i].Length
	}
	w.inline = w.inline[:0]
	switch wr.Opcode {
	case ib.WRSendWithInv, ib.WRLocalInv, ib.WRBindMW:
		fillMWOp(w, wr) // mw.go
	}
	if wr.Flags&ib.SendInline == 0 {
		return nil
	}
	// Inline data is read from registered memory: Go code cannot read an
	// arbitrary address safely, so the SGE's lkey still has to be valid.
	for i := range w.sge {
		s := &w.sge[i]
		ref, f := qp.dev.mrs.Acquire(mem.Key(s.LKey), qp.pd, s.Addr, uint64(s.Length), 0)
		if f != mem.FaultNone {
			return ErrInlineAccess
		}
		w.inline = append(w.inline, ref.Bytes()...)
		ref.Release()
	}
	return nil
}

// PostRecv queues a chain of receive work requests (ibv_post_recv); it
// fails and reports like PostSend.
func (qp *QP) PostRecv(wr *RecvWR) (bad int, err error) {
	qp.rqMu.Lock()
	if qp.closed.Load() {
		qp.rqMu.Unlock()
		return 0, ErrClosed
	}
	if qp.State() == ib.QPStateReset {
		qp.rqMu.Unlock()
		return 0, errQPStateIn[ib.QPStateReset]
	}
	if qp.srq != nil {
		qp.rqMu.Unlock()
		return 0, ErrSRQAttached
	}
	i := 0
	for ; wr != nil; wr, i = wr.Next, i+1 {
		if len(wr.SGList) > int(qp.cap.MaxRecvSGE) {
			err = ErrTooManySGE
			break
		}
		if err = checkLKeys(wr.SGList); err != nil {
			break
		}
		w := qp.rq.Reserve()
		if w == nil {
			err = ErrQueueFull
			break
		}
		w.wrID = wr.WRID
		w.sge = append(w.sge[:0], wr.SGList...)
		w.length = 0
		for j := range w.sge {
			w.length += w.sge[j].Length
		}
		qp.rq.Commit()
	}
	qp.rqMu.Unlock()
	if i > 0 && qp.State() == ib.QPStateErr {
		qp.task.schedule() // flush them
	}
	return i, err
}

// checkLKeys refuses an SGE with lkey 0 at post time: no region has that
// key, and the verbs layer gives it to a range outside its region, so the
// mistake surfaces as a post error rather than as a completion status.
func checkLKeys(sges []SGE) error {
	for i := range sges {
		if sges[i].LKey == 0 {
			return ErrInvalidSGE
		}
	}
	return nil
}
