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
// device worker has QPs to run (a stream's posts), the caller should
// yield.
//
// A turn that ends for a poller to answer (turnYield: requests executed,
// their ACK owed) ends here too; the caller, that poller, answers before
// it yields, and the answer's turn sends the ACK with it. The device
// worker schedules such a QP again afterwards, so that the ACK leaves
// even when no answer comes.
func (d *Device) Progress() (got, yield bool) {
	if d.shared == nil || len(d.worker) > 0 || !d.progMu.TryLock() {
		return false, true
	}
	defer d.progMu.Unlock()
	if !d.rxGate.TryLock() {
		return false, true // the receive loop is receiving
	}
	n, err := d.shared.TryRecvCoalesced(d.prog.msgs)
	if err == nil && n > 0 {
		d.queueBatch(d.prog, n)
	}
	d.rxGate.Unlock()
	rb := d.prog
	for i, qp := range rb.ready {
		if qp.task.scheduleForPoller() {
			select {
			case d.owed <- qp:
			default:
				qp.task.kick() // the worker is far behind: it takes the QP as it is
			}
		}
		rb.ready[i] = nil
	}
	rb.ready = rb.ready[:0]
	return n > 0, err != nil
}
