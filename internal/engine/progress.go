package engine

// Progress receives, on the calling goroutine, what the link has ready
// and runs the turns of the QPs it is for, as the receive loop would; it
// reports whether it received anything, and whether the caller should
// yield the processor before it polls again. It is for a goroutine that
// spins waiting for the device — CQ.Wait in package verbs — and runs
// where the receive loop would need the same processor (a program pinned
// to one CPU: goroutines take turns, and the spinner yielding to the loop
// and the loop yielding back cost a switch each per packet). It polls
// only a link that shares its receiving (conn.SharedReceiver), and only
// while the receive loop waits: the two take turns under the device's
// receive gate, so packets are queued in the order they came. When it
// cannot poll (the loop is receiving, the link does not share), or the
// device worker has QPs to run (a stream's posts), or a stream flows
// (below), the caller should yield.
//
// A turn that ends for a poller to answer (turnYield: requests executed,
// their ACK owed) ends here too; the caller, that poller, answers before
// it yields, and the answer's turn sends the ACK with it. Such a QP is
// scheduled again afterwards, so that the ACK leaves even when no answer
// comes (SettleOwed): when the poller waits again, or by the device
// worker, which runs when the poller yields.
func (d *Device) Progress() (got, yield bool) {
	if d.shared == nil || len(d.worker) > 0 || !d.progMu.TryLock() {
		return false, true
	}
	defer d.progMu.Unlock()
	d.SettleOwed()
	if d.progStream > 0 {
		d.progStream--
		return false, true
	}
	if !d.rxGate.TryLock() {
		return false, true // the receive loop is receiving
	}
	n, err := d.shared.TryRecvCoalesced(d.prog.msgs)
	if err == nil && n > 0 {
		d.queueBatch(d.prog, n)
		pkts := 0
		for i := range n {
			pkts += d.prog.msgs[i].Datagrams()
		}
		if pkts > pingPongPackets {
			d.progStream = streamBackoff
		}
	}
	d.rxGate.Unlock()
	rb := d.prog
	for i, qp := range rb.ready {
		if qp.task.scheduleForPoller() {
			d.owe(qp)
		}
		rb.ready[i] = nil
	}
	rb.ready = rb.ready[:0]
	return n > 0, err != nil
}

// A receive of more than pingPongPackets packets is a stream's (a
// ping-pong brings a message and the ACK that rides with it), and Progress
// then leaves the receiving to the receive loop for its next
// streamBackoff calls, asking for a yield instead. Measured with it off,
// alternated runs, tools pinned: ib_send_bw 8 B's message rate 18 % lower
// (medians of 8), while the latency tools, whose receives never came to
// three packets, gain all the same.
const (
	pingPongPackets = 2
	streamBackoff   = 64
)

// owe records qp, whose turn Progress ended for the poller to answer,
// and wakes the device worker, which settles it if the poller has not by
// the time the worker runs.
func (d *Device) owe(qp *QP) {
	qp.owing.Store(true)
	d.owedMu.Lock()
	if !contains(d.owed, qp) {
		d.owed = append(d.owed, qp)
		d.owedN.Store(int32(len(d.owed)))
	}
	d.owedMu.Unlock()
	select {
	case d.owedWake <- struct{}{}:
	default:
	}
}

// SettleOwed schedules the QPs whose turns Progress ended for the poller
// to answer: idle by now, each turn sends the ACK still owed. A poller
// calls it when it waits again, after its answer if it had one: the
// receiver of a stream of SENDs, which answers nothing and finds
// completions waiting while the stream flows, has its ACKs go then rather
// than when it yields to the worker. A QP that took a turn since (the
// answer's, which sent the ACK with it) is owed nothing: scheduling it
// anyway cost ib_write_lat a turn each way, 7 % of the engine's time in
// BenchmarkWriteLatEngine.
//
// A poller calls it at every look, and mostly nothing is owed: that is
// read without the lock (an owe under way meanwhile wakes the worker).
func (d *Device) SettleOwed() {
	for d.owedN.Load() > 0 {
		d.owedMu.Lock()
		n := len(d.owed)
		if n == 0 {
			d.owedMu.Unlock()
			return
		}
		qp := d.owed[n-1]
		d.owed[n-1] = nil
		d.owed = d.owed[:n-1]
		d.owedN.Store(int32(n - 1))
		d.owedMu.Unlock()
		if qp.owing.Load() {
			qp.task.schedule()
		}
	}
}
