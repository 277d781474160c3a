package perftest

import (
	"fmt"

	"github.com/goverbs/goverbs/verbs"
)

// pollBatch is how many completions one poll takes (perftest's
// CTX_POLL_BATCH).
const pollBatch = 16

// sendWR is the work request of the test's verb: size bytes from the
// start of the local half to the peer's advertised address.
func (r *runner) sendWR(size int) verbs.SendWR {
	s := r.s
	wr := verbs.SendWR{SGList: []verbs.SGE{s.mr.SGE(0, size)}, RemoteAddr: s.rem.VAddr, RKey: verbs.RKey(s.rem.RKey)}
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
	return wr
}

// bwClient posts size-byte operations, up to tx depth outstanding and a
// completion requested every CQ-moderation posts and for the last, and
// measures them (perftest's run_iter_bw).
func (r *runner) bwClient(size int) (Report, error) {
	cfg, s := r.cfg, r.s
	n := cfg.Iters
	peak := !cfg.NoPeak
	var posted, completed []int64
	if peak {
		posted, completed = make([]int64, n), make([]int64, n)
	}
	d := startDuration(cfg)
	defer d.halt()
	wr := r.sendWR(size)
	base := wr.Flags
	wcs := make([]verbs.WC, pollBatch)
	scnt, ccnt := 0, 0
	start := now()
	for ccnt < n || d != nil {
		for (d != nil || scnt < n) && scnt-ccnt < cfg.TxDepth && !d.over() {
			wr.WRID, wr.Flags = uint64(scnt), base
			if (scnt+1)%cfg.CQMod == 0 || (d == nil && scnt == n-1) {
				wr.Flags |= verbs.SendSignaled
			}
			if peak {
				posted[scnt] = now()
			}
			if err := s.qp.PostSend(&wr); err != nil {
				return Report{}, fmt.Errorf("Couldn't post send: scnt=%d: %w", scnt, err)
			}
			scnt++
		}
		if d.over() {
			break
		}
		k, err := s.scq.Wait(d.context(), wcs)
		if d.over() {
			break
		}
		if err != nil {
			return Report{}, fmt.Errorf("poll CQ failed: %w", err)
		}
		t := now()
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess {
				return Report{}, completionError(&wc, scnt, ccnt)
			}
			done := int(wc.WRID) + 1
			for ; ccnt < done; ccnt++ {
				if peak {
					completed[ccnt] = t
				}
				d.count(1)
			}
		}
	}
	end := now()
	if d != nil {
		return bwReport(cfg, size, d.iters, d.window(), 0), nil
	}
	if !peak {
		return bwReport(cfg, size, n, end-start, 0), nil
	}
	return bwReport(cfg, size, n, completed[n-1]-posted[0], peakDelta(posted, completed, cfg.CQMod)), nil
}

// bwServer receives the client's SENDs, reposting receives until iters
// are posted, and measures from the first arrival (perftest's
// run_iter_bw_server).
func (r *runner) bwServer(size int) (Report, error) {
	cfg := r.cfg
	var d *durationRun
	defer func() { d.halt() }()
	wcs := make([]verbs.WC, pollBatch)
	var first int64
	rcnt := 0
	for d != nil || rcnt < cfg.Iters {
		k, err := r.s.rcq.Wait(d.context(), wcs)
		if d.over() {
			break
		}
		if err != nil {
			return Report{}, fmt.Errorf("Poll Receive CQ failed: %w", err)
		}
		if rcnt == 0 {
			first = now()
			d = startDuration(cfg)
		}
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess {
				return Report{}, completionError(&wc, 0, rcnt)
			}
			rcnt++
			d.count(1)
			if err := r.repostRecv(d != nil); err != nil {
				return Report{}, err
			}
		}
	}
	if d != nil {
		return bwReport(cfg, size, d.iters, d.window(), 0), nil
	}
	return bwReport(cfg, size, rcnt, now()-first, 0), nil
}

// completionError reports a failed completion as perftest does.
func completionError(wc *verbs.WC, scnt, ccnt int) error {
	return fmt.Errorf("Completion with error at client: Failed status %d: wr_id %d syndrom 0x%x scnt=%d, ccnt=%d (%s)",
		uint8(wc.Status), wc.WRID, wc.VendorErr, scnt, ccnt, wc.Status)
}

// postRecvs posts the first receives of a size: rx depth of them, or
// fewer when the run has fewer messages.
func (r *runner) postRecvs(size, n int) error {
	r.recv = verbs.RecvWR{SGList: []verbs.SGE{r.s.mr.SGE(r.s.buff, size)}}
	r.posted = 0
	for range n {
		if err := r.repostRecv(true); err != nil {
			return err
		}
	}
	return nil
}

// repostRecv posts one more receive unless the iterations already have
// theirs; a -D run (always) posts without limit.
func (r *runner) repostRecv(always bool) error {
	if !always && r.posted >= r.cfg.Iters {
		return nil
	}
	if err := r.s.qp.PostRecv(&r.recv); err != nil {
		return fmt.Errorf("Couldn't post receive: %w", err)
	}
	r.posted++
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
