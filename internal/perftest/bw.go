package perftest

import (
	"context"
	"fmt"

	"github.com/goverbs/goverbs/verbs"
)

// pollBatch is how many completions one poll takes (perftest's
// CTX_POLL_BATCH).
const pollBatch = 16

// sendWR is the work request of the test's verb on QP i: size bytes from
// the start of the QP's local region to the address the peer's QP i
// advertised.
func (r *runner) sendWR(i, size int) verbs.SendWR {
	s := r.s
	wr := verbs.SendWR{SGList: []verbs.SGE{s.mr.SGE(s.local(i), size)}, RemoteAddr: s.rem[i].VAddr, RKey: verbs.RKey(s.rem[i].RKey)}
	switch r.cfg.Test.Verb {
	case Send:
		wr.Opcode = verbs.WRSend
	case Write:
		wr.Opcode = verbs.WRRDMAWrite
	case Read:
		wr.Opcode = verbs.WRRDMARead
	case Atomic:
		wr.Opcode = verbs.WRAtomicFetchAndAdd
		wr.CompareAdd = 1
		if r.cfg.Atomic == CmpAndSwap {
			wr.Opcode, wr.CompareAdd = verbs.WRAtomicCmpAndSwp, 0
		}
	}
	if size <= r.cfg.Inline {
		wr.Flags |= verbs.SendInline
	}
	s.address(&wr, i)
	return wr
}

// wrID tags a send with its QP and its number on that QP, so that one
// completion tells which QP's operations it completes.
func wrID(qp, n int) uint64 { return uint64(qp)<<32 | uint64(n) }

// sender posts a BW test's operations on every QP in turn, up to tx depth
// outstanding per QP and a completion requested every CQ-moderation posts
// and for the last, and counts their completions (the sending half of
// perftest's run_iter_bw and run_iter_bi). Each QP runs the iterations,
// so the count is iters × QPs.
type sender struct {
	r            *runner
	wrs          []verbs.SendWR // one per QP
	base         verbs.SendFlags
	scnt, ccnt   []int // per QP
	tscnt, tccnt int   // over all QPs
	total        int
	// posted and completed time every operation when the peak is
	// computed.
	posted, completed []int64
}

func (r *runner) newSender(size int) *sender {
	q := len(r.s.qps)
	x := &sender{r: r, wrs: make([]verbs.SendWR, q), scnt: make([]int, q), ccnt: make([]int, q), total: q * r.cfg.Iters}
	for i := range x.wrs {
		x.wrs[i] = r.sendWR(i, size)
	}
	x.base = x.wrs[0].Flags
	if !r.cfg.NoPeak {
		x.posted, x.completed = make([]int64, x.total), make([]int64, x.total)
	}
	return x
}

// done reports whether every operation of an iteration-mode run completed.
func (x *sender) done() bool { return x.tccnt >= x.total }

// post fills every QP's send queue up to the tx depth: with the
// iterations still to post, or without end in a -D run until it is over.
func (x *sender) post(d *durationRun) error {
	cfg, n := x.r.cfg, x.r.cfg.Iters
	for i, qp := range x.r.s.qps {
		wr := &x.wrs[i]
		for (d != nil || x.scnt[i] < n) && x.scnt[i]-x.ccnt[i] < cfg.TxDepth && !d.over() {
			wr.WRID, wr.Flags = wrID(i, x.scnt[i]), x.base
			if (x.scnt[i]+1)%cfg.CQMod == 0 || (d == nil && x.scnt[i] == n-1) {
				wr.Flags |= verbs.SendSignaled
			}
			if x.posted != nil {
				x.posted[x.tscnt] = now()
			}
			if err := qp.PostSend(wr); err != nil {
				return fmt.Errorf("Couldn't post send: qp %d scnt=%d: %w", i, x.scnt[i], err)
			}
			x.scnt[i]++
			x.tscnt++
		}
	}
	return nil
}

// complete counts the operations that the send completions wcs complete,
// every one up to the signalled one on its QP.
func (x *sender) complete(wcs []verbs.WC, d *durationRun) error {
	t := now()
	for _, wc := range wcs {
		if wc.Status != verbs.WCSuccess {
			return completionError(&wc, x.tscnt, x.tccnt)
		}
		i, done := int(wc.WRID>>32), int(uint32(wc.WRID))+1
		if i >= len(x.scnt) || done > x.scnt[i] {
			return fmt.Errorf("completion of an operation never posted: wr_id %#x", wc.WRID)
		}
		for ; x.ccnt[i] < done; x.ccnt[i]++ {
			if x.completed != nil {
				x.completed[x.tccnt] = t
			}
			x.tccnt++
			d.count(1)
		}
	}
	return nil
}

// report is the measurement of an iteration-mode run that started at
// start and ended at end: from the first post to the last completion when
// the peak is computed, as perftest times it.
func (x *sender) report(size int, start, end int64) Report {
	if x.posted == nil {
		return bwReport(x.r.cfg, size, x.total, end-start, 0)
	}
	return bwReport(x.r.cfg, size, x.total, x.completed[x.total-1]-x.posted[0], peakDelta(x.posted, x.completed, x.r.cfg.CQMod))
}

// bwClient runs the operations of a BW test and measures them (perftest's
// run_iter_bw).
func (r *runner) bwClient(size int) (Report, error) {
	x := r.newSender(size)
	d := startDuration(r.cfg)
	defer d.halt()
	wcs := make([]verbs.WC, pollBatch)
	start := now()
	for !x.done() || d != nil {
		if err := x.post(d); err != nil {
			return Report{}, err
		}
		if d.over() {
			break
		}
		k, err := r.s.wait(d.context(), r.s.scq, wcs)
		if d.over() {
			break
		}
		if err != nil {
			return Report{}, fmt.Errorf("poll CQ failed: %w", err)
		}
		if err := x.complete(wcs[:k], d); err != nil {
			return Report{}, err
		}
	}
	if d != nil {
		return bwReport(r.cfg, size, d.iters, d.window(), 0), nil
	}
	return x.report(size, start, now()), nil
}

// bwServer receives the client's SENDs on every QP, reposting receives
// until each QP has iters posted, and measures from the first arrival
// (perftest's run_iter_bw_server).
func (r *runner) bwServer(size int) (Report, error) {
	cfg := r.cfg
	total := len(r.s.qps) * cfg.Iters
	var d *durationRun
	defer func() { d.halt() }()
	wcs := make([]verbs.WC, pollBatch)
	var first int64
	rcnt := 0
	stall := watchStall(context.Background(), cfg, total)
	defer stall.stop()
	for d != nil || rcnt < total {
		k, err := r.s.wait(stall.context(d.context()), r.s.rcq, wcs)
		if d.over() {
			break
		}
		if err := stall.err(); err != nil {
			return Report{}, err
		}
		if err != nil {
			return Report{}, fmt.Errorf("Poll Receive CQ failed: %w", err)
		}
		if rcnt == 0 {
			first = now()
			d = startDuration(cfg)
		}
		if rcnt, err = r.received(wcs[:k], rcnt, d); err != nil {
			return Report{}, err
		}
		stall.count(rcnt)
	}
	if d != nil {
		return bwReport(cfg, size, d.iters, d.window(), 0), nil
	}
	return bwReport(cfg, size, rcnt, now()-first, 0), nil
}

// received counts the receive completions wcs on top of rcnt and posts a
// receive in place of each on its QP, until the iterations have theirs
// (without end in a -D run, d set).
func (r *runner) received(wcs []verbs.WC, rcnt int, d *durationRun) (int, error) {
	for _, wc := range wcs {
		if wc.Status != verbs.WCSuccess {
			return rcnt, completionError(&wc, 0, rcnt)
		}
		rcnt++
		d.count(1)
		if err := r.repostRecv(int(wc.WRID), d != nil); err != nil {
			return rcnt, err
		}
	}
	return rcnt, nil
}

// completionError reports a failed completion as perftest does.
func completionError(wc *verbs.WC, scnt, ccnt int) error {
	return fmt.Errorf("Completion with error at client: Failed status %d: wr_id %d syndrom 0x%x scnt=%d, ccnt=%d (%s)",
		uint8(wc.Status), wc.WRID, wc.VendorErr, scnt, ccnt, wc.Status)
}

// postRecvs posts the first receives of a size on every QP: rx depth of
// them, or fewer when the run has fewer messages. QP i receives into the
// region the peer's QP i targets; the receive's WRID is the QP's index.
func (r *runner) postRecvs(size, n int) error {
	q := len(r.s.qps)
	r.recv, r.posted = make([]verbs.RecvWR, q), make([]int, q)
	for i := range q {
		r.recv[i] = verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{r.s.recvSGE(i, size)}}
		for range n {
			if err := r.repostRecv(i, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// repostRecv posts one more receive on QP i unless the iterations already
// have theirs; a -D run (always) posts without limit.
func (r *runner) repostRecv(i int, always bool) error {
	if i < 0 || i >= len(r.recv) {
		return fmt.Errorf("receive completion of an unknown QP: wr_id %d", i)
	}
	if !always && r.posted[i] >= r.cfg.Iters {
		return nil
	}
	if err := r.s.qps[i].PostRecv(&r.recv[i]); err != nil {
		return fmt.Errorf("Couldn't post recv Qp=%d: %w", i, err)
	}
	r.posted[i]++
	return nil
}

// peakDelta is the shortest time per operation over every run of
// consecutive operations from a post to a requested completion: the peak
// of perftest's print_report_bw. Completions are requested every cqMod
// operations and for the last.
func peakDelta(posted, completed []int64, cqMod int) int64 {
	n := len(posted)
	best := completed[0] - posted[0]
	try := func(i, j int) {
		if t := (completed[j] - posted[i]) / int64(j-i+1); t < best {
			best = t
		}
	}
	for i := range n {
		for j := (i+cqMod)/cqMod*cqMod - 1; j < n; j += cqMod {
			try(i, j)
		}
		if n%cqMod != 0 {
			try(i, n-1)
		}
	}
	return best
}

// bwReport turns a measurement into perftest's numbers: bandwidth in MB/s
// (2^20 bytes) or Gb/s (10^9 bits) and millions of messages per second.
// A peak of 0 means none was computed.
func bwReport(cfg *Config, size, iters int, elapsed, peak int64) Report {
	unit := float64(1 << 20)
	if cfg.Gbits {
		unit = 125e6
	}
	r := Report{Size: uint64(size), Iters: uint64(iters)}
	if elapsed > 0 {
		sec := float64(elapsed) / 1e9
		r.BWAvg = float64(size) * float64(iters) / sec / unit
		r.MsgRate = float64(iters) / sec / 1e6
	}
	if peak > 0 {
		r.BWPeak = float64(size) / (float64(peak) / 1e9) / unit
	}
	return r
}
