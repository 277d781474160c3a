package perftest

import (
	"context"
	"sync/atomic"
	"time"
)

// epoch anchors the run's monotonic timestamps, which stand in for
// perftest's CPU cycle counts.
var epoch = time.Now()

// now is the time since epoch in nanoseconds.
func now() int64 { return int64(time.Since(epoch)) }

// Phases of a -D run, as perftest's SIGALRM handler moves through them.
const (
	warmUp int32 = iota
	sampling
	coolDown
	ended
)

// durationRun clocks a -D run: Margin seconds of warm-up, Duration − 2 ·
// Margin seconds measured, Margin seconds more, then the end. The test
// loop counts what completes while sampling. A nil *durationRun is an
// iteration-mode run that never ends by time.
type durationRun struct {
	phase       atomic.Int32
	start, stop atomic.Int64 // the sampling window
	ctx         context.Context
	cancel      context.CancelFunc
	iters       int // counted by the test loop while sampling
}

// startDuration starts the clock of a -D run; nil in iteration mode. The
// caller must call halt when the loop is over.
func startDuration(cfg *Config) *durationRun {
	if cfg.Duration == 0 {
		return nil
	}
	d := &durationRun{}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	margin := time.Duration(cfg.Margin) * time.Second
	steps := []struct {
		after time.Duration
		next  int32
		stamp *atomic.Int64
	}{
		{margin, sampling, &d.start},
		{time.Duration(cfg.Duration)*time.Second - 2*margin, coolDown, &d.stop},
		{margin, ended, nil},
	}
	go func() {
		defer d.cancel()
		for _, s := range steps {
			t := time.NewTimer(s.after)
			select {
			case <-t.C:
			case <-d.ctx.Done():
				t.Stop()
				return
			}
			if s.stamp != nil {
				s.stamp.Store(now())
			}
			d.phase.Store(s.next)
		}
	}()
	return d
}

// context is done when the run has ended (Background in iteration mode).
func (d *durationRun) context() context.Context {
	if d == nil {
		return context.Background()
	}
	return d.ctx
}

// over reports whether the run has ended by time.
func (d *durationRun) over() bool { return d != nil && d.phase.Load() == ended }

// count adds n completed operations if they completed while sampling.
func (d *durationRun) count(n int) {
	if d != nil && d.phase.Load() == sampling {
		d.iters += n
	}
}

// halt stops the clock's goroutine.
func (d *durationRun) halt() {
	if d != nil {
		d.cancel()
	}
}

// window is the measured time in nanoseconds.
func (d *durationRun) window() int64 { return d.stop.Load() - d.start.Load() }
