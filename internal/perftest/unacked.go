package perftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/verbs"
)

// What UC and UD change in the tests (doc/tools.md §2.11).
const (
	// qkey is every UD QP's Q_Key and the one every UD send names
	// (perftest's DEF_QKEY).
	qkey = 0x11111111
	// grhSize is the network header a UD receive buffer starts with
	// (perftest's UD_ADDITION).
	grhSize = 40
)

// udSlack is what a UD test adds to its buffer: each receive starts a
// cache line less the GRH into its region, so the last one ends past
// the regions (perftest adds the cache line too).
func (s *session) udSlack() int {
	if s.cfg.Conn != verbs.QPTypeUD {
		return 0
	}
	return CacheLine
}

// recvSGE is where QP i receives size-byte messages: the region the peer
// targets, in UD tests from a cache line less the GRH into it, with room
// for the GRH.
func (s *session) recvSGE(i, size int) verbs.SGE {
	if s.cfg.Conn != verbs.QPTypeUD {
		return s.mr.SGE(s.remote(i), size)
	}
	return s.mr.SGE(s.remote(i)+CacheLine-grhSize, grhSize+size)
}

// createAH makes QP i's address handle of the peer's QP, from the path a
// connected QP would take, and addresses QP i's sends with it.
func (s *session) createAH(i int, path *verbs.AHAttr) error {
	ah, err := s.pd.CreateAH(path)
	if err != nil {
		return fmt.Errorf("Failed to create AH: %w", err)
	}
	if s.ahs == nil {
		s.ahs = make([]*verbs.AH, len(s.qps))
	}
	s.ahs[i] = ah
	return nil
}

// address makes wr a UD send of QP i to the peer's QP i.
func (s *session) address(wr *verbs.SendWR, i int) {
	if s.cfg.Conn == verbs.QPTypeUD && s.ahs != nil {
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = s.ahs[i], verbs.QPN(s.rem[i].QPN), qkey
	}
}

// errUDSize is perftest's refusal of a UD size beyond the MTU given with
// -s (check_mtu).
var errUDSize = errors.New(" Max message size in UD cannot be greater than MTU ")

// fitUD brings a UD test's size within one packet of the negotiated MTU,
// as perftest does after the MTU exchange: a size it chose itself (the
// default, or -a's largest) comes down to the MTU with a note on stderr,
// one given with -s fails.
func fitUD(cfg *Config, mtu int, stderr io.Writer) error {
	if cfg.Conn != verbs.QPTypeUD || cfg.Size <= mtu {
		return nil
	}
	if cfg.sizeSet && !cfg.All {
		return errUDSize
	}
	fmt.Fprintf(stderr, " Max msg size in UD is MTU %d\n Changing to this MTU\n", mtu)
	cfg.Size = mtu
	return nil
}

// stallCheck is perftest's check_alive for the receiving side of UC and
// UD bandwidth tests, whose messages may be lost: every minute it
// compares the messages received with the minute before, and a minute
// without one ends the wait (ctx), with the count for the message
// (which says 120 seconds, as perftest's does).
type stallCheck struct {
	ctx    context.Context
	cancel context.CancelFunc
	got    atomic.Int64
	want   int
	done   chan struct{}
}

// stallPeriod is check_alive's alarm.
var stallPeriod = 60 * time.Second

// watchStall starts a stallCheck under parent for want messages; nil for
// RC, which loses nothing.
func watchStall(parent context.Context, cfg *Config, want int) *stallCheck {
	if cfg.Conn == verbs.QPTypeRC || cfg.Duration > 0 {
		return nil
	}
	c := &stallCheck{want: want, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(parent)
	go func() {
		t := time.NewTicker(stallPeriod)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
				if n := c.got.Load(); n == last {
					c.cancel()
					return
				} else {
					last = n
				}
			}
		}
	}()
	return c
}

// context is the context to wait under.
func (c *stallCheck) context(parent context.Context) context.Context {
	if c == nil {
		return parent
	}
	return c.ctx
}

// count records that n messages have arrived in all.
func (c *stallCheck) count(n int) {
	if c != nil {
		c.got.Store(int64(n))
	}
}

// err returns the error of a wait the check ended, or nil.
func (c *stallCheck) err() error {
	if c == nil || c.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf(" Did not get Message for 120 Seconds, exiting..\n Total Received=%d, Total Iters Required=%d",
		c.got.Load(), c.want)
}

// stop ends the check.
func (c *stallCheck) stop() {
	if c != nil {
		close(c.done)
		c.cancel()
	}
}
