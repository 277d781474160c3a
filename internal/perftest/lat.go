package perftest

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/goverbs/goverbs/verbs"
)

// latResult is one size's latency measurement: the post time of every
// iteration, or in a -D run the count and the measured window.
type latResult struct {
	size   int
	iters  int
	posted []int64
	window int64
	// halve is set for round trips (SEND and WRITE ping-pong), whose one-way
	// latency is half the time between posts.
	halve bool
}

func (r *runner) newLat(size int) latResult {
	l := latResult{size: size, halve: !r.cfg.Test.Verb.readLike()}
	if r.cfg.Duration == 0 {
		l.iters = r.cfg.Iters
		l.posted = make([]int64, l.iters)
	}
	return l
}

// finish records a -D run's count and window.
func (l *latResult) finish(d *durationRun) {
	if d != nil {
		l.iters, l.window = d.iters, d.window()
	}
}

// post records the post time of iteration i (iteration mode only).
func (l *latResult) post(i int) {
	if l.posted != nil {
		l.posted[i] = now()
	}
}

// LatStats are the numbers of perftest's latency line, in microseconds.
type LatStats struct {
	Min, Max, Typical, Avg, Stdev, P99, P999 float64
}

// latTail is how many of the largest samples the statistics leave out
// (perftest's LAT_MEASURE_TAIL).
const latTail = 2

// stats computes perftest's latency statistics (print_report_lat) from
// the post times: the iters−1 gaps between posts, sorted; the largest two
// left out of the median, average and deviation; t_max the second
// largest; the percentiles at ceil(m·0.99) and ceil(m·0.999) of the m
// samples kept. Unlike perftest, which truncates each deviation to an
// integer number of microseconds, the deviation is computed exactly.
func (l *latResult) stats() LatStats {
	div := 1e3 // ns to µs
	if l.halve {
		div *= 2
	}
	d := make([]float64, len(l.posted)-1)
	for i := range d {
		d[i] = float64(l.posted[i+1]-l.posted[i]) / div
	}
	slices.Sort(d)
	m := len(d) - latTail
	var s LatStats
	if m%2 == 0 {
		s.Typical = (d[m/2] + d[m/2-1]) / 2
	} else {
		s.Typical = d[m/2]
	}
	for _, v := range d[:m] {
		s.Avg += v
	}
	s.Avg /= float64(m)
	for _, v := range d[:m] {
		s.Stdev += (s.Avg - v) * (s.Avg - v)
	}
	s.Stdev = math.Sqrt(s.Stdev / float64(m))
	s.Min, s.Max = d[0], d[m]
	s.P99 = d[int(math.Ceil(float64(m)*0.99))]
	s.P999 = d[int(math.Ceil(float64(m)*0.999))]
	return s
}

// print writes the size's result line.
func (l *latResult) print(w io.Writer, cfg *Config) {
	if cfg.Duration > 0 {
		var lat, tps float64
		if l.iters > 0 && l.window > 0 {
			lat = float64(l.window) / 1e3 / float64(l.iters)
			if l.halve {
				lat /= 2
			}
			tps = float64(l.iters) / (float64(l.window) / 1e9)
		}
		WriteLatDurationLine(w, l.size, l.iters, lat, tps)
		return
	}
	WriteLatLine(w, l.size, l.iters, l.stats())
}

// latWrite is ib_write_lat's ping-pong of RDMA WRITEs (run_iter_lat_write):
// the server writes first; each side waits until the last byte of its
// receive half holds the peer's next iteration number, then writes its
// own. The server's last wait is for the client's last write, so neither
// side leaves while a write to it is in flight.
func (r *runner) latWrite(size int) (latResult, error) {
	s, n := r.s, r.cfg.Iters
	d := startDuration(r.cfg)
	defer d.halt()
	l := r.newLat(size)
	wr := r.sendWR(0, size)
	wr.Flags |= verbs.SendSignaled
	mark := &s.buf.Bytes()[size-1]                // last byte sent
	arrived := &s.buf.Bytes()[s.remote(0)+size-1] // last byte the peer writes
	server := !r.cfg.client()
	wcs := make([]verbs.WC, 1)
	scnt, rcnt := 0, 0
	for d != nil || scnt < n || rcnt < n {
		if (d != nil || rcnt < n) && (scnt > 0 || !server) {
			rcnt++
			if !waitByte(arrived, byte(rcnt), d.over) {
				break
			}
		}
		if d == nil && scnt == n {
			continue
		}
		if d.over() {
			break
		}
		l.post(scnt)
		scnt++
		*mark = byte(scnt)
		over, err := r.postWait(d, &wr, wcs, scnt)
		if err != nil {
			return l, err
		}
		if over {
			break
		}
	}
	l.finish(d)
	return l, nil
}

// postWait posts one signalled operation, the scnt-th, and waits for its
// completion, which a -D run counts; over reports that the run ended first.
func (r *runner) postWait(d *durationRun, wr *verbs.SendWR, wcs []verbs.WC, scnt int) (over bool, err error) {
	if err := r.s.qps[0].PostSend(wr); err != nil {
		return false, fmt.Errorf("Couldn't post send: scnt=%d: %w", scnt, err)
	}
	if over, err = r.waitSend(d, wcs, scnt); err == nil && !over {
		d.count(1)
	}
	return over, err
}

// waitSend waits for the completion of the one signalled send in flight;
// over reports that a -D run ended first.
func (r *runner) waitSend(d *durationRun, wcs []verbs.WC, scnt int) (over bool, err error) {
	_, err = r.s.wait(d.context(), r.s.scq, wcs)
	if d.over() {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("poll CQ failed: %w", err)
	}
	if wcs[0].Status != verbs.WCSuccess {
		return false, completionError(&wcs[0], scnt, scnt-1)
	}
	return false, nil
}

// waitByte spins until *p holds v, yielding the processor each turn, and
// reports false if stop says the run is over first. The byte is written
// by the NIC behind the program's back, as a DMA engine writes host
// memory: nothing orders that write before this read but the value
// itself, so the read is kept out of the race detector's view, the one
// place that does so.
//
// After spinFor without the byte it naps between looks instead. On one
// processor (a tool pinned to a CPU) a goroutine that only yields keeps
// the runtime from checking the network, so once the receive loop has
// stopped polling and sleeps, the packet it waits for is noticed only by
// the runtime's 10 ms background check. A nap lets the idle processor
// wait on the network; the receive loop, woken at once, then writes the
// byte and polls, and the nap's timer ends on its next yield.
//
//go:norace
func waitByte(p *byte, v byte, stop func() bool) bool {
	var start int64
	for i := 0; *p != v; i++ {
		if stop() {
			return false
		}
		switch {
		case i < 64:
		case start == 0:
			start = now()
		case now()-start > int64(spinFor):
			time.Sleep(napFor)
			continue
		}
		runtime.Gosched()
	}
	return true
}

// spinFor is how long waitByte spins before it naps, napFor how long a
// nap asks for: both near a round trip, a few tens of microseconds.
const (
	spinFor = 50 * time.Microsecond
	napFor  = 20 * time.Microsecond
)

// latRead is ib_read_lat and ib_atomic_lat (run_iter_lat): one READ or
// atomic at a time, each waited for.
func (r *runner) latRead(size int) (latResult, error) {
	n := r.cfg.Iters
	d := startDuration(r.cfg)
	defer d.halt()
	l := r.newLat(size)
	wr := r.sendWR(0, size)
	wr.Flags |= verbs.SendSignaled
	wcs := make([]verbs.WC, 1)
	for i := 0; (d != nil || i < n) && !d.over(); i++ {
		l.post(i)
		over, err := r.postWait(d, &wr, wcs, i+1)
		if err != nil {
			return l, err
		}
		if over {
			break
		}
	}
	l.finish(d)
	return l, nil
}

// latSend is ib_send_lat's ping-pong of SENDs (run_iter_lat_send): the
// client sends first, each side answers a receive with a send. Sends are
// signalled every CQ-moderation sends and for the last. In a -D run the
// clock starts with the first message received.
func (r *runner) latSend(size int) (latResult, error) {
	s, n := r.s, r.cfg.Iters
	duration := r.cfg.Duration > 0
	var d *durationRun
	defer func() { d.halt() }()
	l := r.newLat(size)
	wr := r.sendWR(0, size)
	client := r.cfg.client()
	wcs := make([]verbs.WC, 1)
	scnt, rcnt := 0, 0
	for duration || scnt < n || rcnt < n {
		if (duration || rcnt < n) && (scnt > 0 || !client) {
			_, err := s.wait(d.context(), s.rcq, wcs)
			if d.over() {
				break
			}
			if err != nil {
				return l, fmt.Errorf("poll CQ failed: %w", err)
			}
			if wcs[0].Status != verbs.WCSuccess {
				return l, completionError(&wcs[0], scnt, rcnt)
			}
			if rcnt == 0 && duration {
				d = startDuration(r.cfg)
			}
			rcnt++
			d.count(1)
			if err := r.repostRecv(0, duration); err != nil {
				return l, err
			}
		}
		if !duration && scnt == n {
			continue
		}
		l.post(scnt)
		scnt++
		wr.Flags &^= verbs.SendSignaled
		signalled := scnt%r.cfg.CQMod == 0 || !duration && scnt == n
		if signalled {
			wr.Flags |= verbs.SendSignaled
		}
		if err := s.qps[0].PostSend(&wr); err != nil {
			return l, fmt.Errorf("Couldn't post send: scnt=%d: %w", scnt, err)
		}
		if !signalled {
			continue
		}
		over, err := r.waitSend(d, wcs, scnt)
		if err != nil {
			return l, err
		}
		if over {
			break
		}
	}
	l.finish(d)
	return l, nil
}
