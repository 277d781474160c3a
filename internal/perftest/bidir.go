package perftest

import (
	"fmt"

	"github.com/goverbs/goverbs/verbs"
)

// rdmaBWBidir is ib_write_bw, ib_read_bw and ib_atomic_bw with -b
// (doc/tools.md §2.10): after the header both sides run the client's test
// at once, a handshake before each size (and with -a one after it, as
// perftest does from 4.6 on), then swap reports and print their sum.
func (r *runner) rdmaBWBidir() error {
	for _, size := range r.sizes() {
		if err := r.hs(0); err != nil {
			return err
		}
		rep, err := r.bwClient(size)
		if err != nil {
			return err
		}
		if r.cfg.All {
			if err := r.hs(0); err != nil {
				return err
			}
		}
		if err := r.printBidir(rep); err != nil {
			return err
		}
	}
	fmt.Fprintln(r.out, ResultLine)
	return r.close()
}

// printBidir swaps this side's report for the peer's and prints the line
// of both directions.
func (r *runner) printBidir(mine Report) error {
	theirs, err := r.ctl.ExchangeReport(mine)
	if err != nil {
		return err
	}
	writeBWSum(r.out, mine, theirs, r.cfg.Gbits)
	return nil
}

// bwBidir is ib_send_bw -b (perftest's run_iter_bi): each side sends the
// iterations on every QP, as bwClient does, while it receives as many from
// the peer, reposting receives as bwServer does; the server sends once the
// client's first message has arrived. The sends are measured as in
// bwClient; a -D run counts what both directions completed, on the
// server's side from its first arrival.
func (r *runner) bwBidir(size int) (Report, error) {
	cfg, s := r.cfg, r.s
	x := r.newSender(size)
	duration := cfg.Duration > 0
	sending := cfg.client()
	var d *durationRun
	if sending {
		d = startDuration(cfg)
	}
	defer func() { d.halt() }()
	wcs := make([]verbs.WC, pollBatch)
	rcnt := 0
	start := now()
	for duration && !d.over() || !duration && (!x.done() || rcnt < x.total) {
		if sending {
			if err := x.post(d); err != nil {
				return Report{}, err
			}
		}
		k, err := s.rcq.Poll(wcs)
		if err != nil {
			return Report{}, fmt.Errorf("Poll Receive CQ failed: %w", err)
		}
		if k > 0 && !sending {
			sending, d = true, startDuration(cfg)
		}
		if rcnt, err = r.received(wcs[:k], rcnt, d); err != nil {
			return Report{}, err
		}
		m, err := s.scq.Poll(wcs)
		if err != nil {
			return Report{}, fmt.Errorf("poll CQ failed: %w", err)
		}
		if err := x.complete(wcs[:m], d); err != nil {
			return Report{}, err
		}
		if k == 0 && m == 0 {
			if err := s.waitEither(d.context()); err != nil && !d.over() {
				return Report{}, err
			}
		}
	}
	if duration {
		return bwReport(cfg, size, d.iters, d.window(), 0), nil
	}
	return x.report(size, start, now()), nil
}
