package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/verbs"
)

// Every message is one template with its number in the first 8 bytes, so
// filling and checking it is a copy and a compare, not a byte loop that
// would dominate the timing.
var template []byte

func templateFor(size int) []byte {
	if len(template) != size {
		template = make([]byte, size)
		for j := range template {
			template[j] = byte(j*7 + j>>8)
		}
	}
	return template
}

// pattern fills b with message i.
func pattern(b []byte, i int) {
	copy(b, templateFor(len(b)))
	if len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, uint64(i))
	}
}

// checkPattern verifies every byte of message i.
func checkPattern(b []byte, i int) error {
	t := templateFor(len(b))
	if len(b) >= 8 && (binary.LittleEndian.Uint64(b) != uint64(i) || !bytes.Equal(b[8:], t[8:])) ||
		len(b) < 8 && !bytes.Equal(b, t) {
		return fmt.Errorf("message %d arrived corrupted", i)
	}
	return nil
}

// slot returns the SGE of slot k of e's buffer.
func (e *endpoint) slot(cfg demoConfig, k int) verbs.SGE { return e.buf.SGE(k*cfg.size, cfg.size) }

func (e *endpoint) slotBytes(cfg demoConfig, k int) []byte {
	return e.buf.Bytes()[k*cfg.size : (k+1)*cfg.size]
}

var errStalled = errors.New("no completion within 10 s")

// wait waits for completions on cq (CQ.Wait), failing with errStalled if
// none comes within 10 s. The demo's two devices share one process, and
// with one processor (GOMAXPROCS=1, a one-CPU container or taskset) a
// loop spinning on one device's CQ starves the other device's receive
// loop until the runtime looks at the network, every 10 ms; Wait sleeps
// when its spin ends, which lets it run. Spinning on Poll, the demo took
// 13 s where it now takes 0.15 (12–15 MB/s against 1.3–1.9 GB/s), and
// with two processors it ran at a third of the rate or less.
//
// It returns ctx's error once ctx is done.
func wait(ctx context.Context, cq *verbs.CQ, wcs []verbs.WC) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := cq.Wait(ctx, wcs)
	if errors.Is(err, context.DeadlineExceeded) {
		return 0, errStalled
	}
	return n, err
}

// stage drives one operation: mk builds send WR i; done checks its
// completion; r (optional) is the peer's receive side, and ready
// (optional) says whether WR i may be posted yet.
type stage struct {
	mk    func(i int) *verbs.SendWR
	done  func(i int, wc *verbs.WC) error
	r     *receiver
	ready func(i int) bool
}

// pipeline posts cfg.iters send WRs on a, keeping cfg.depth outstanding,
// and hands each completion, in order, to s.done.
func pipeline(a *endpoint, cfg demoConfig, s stage) error {
	wcs := make([]verbs.WC, cfg.depth)
	posted, completed := 0, 0
	for completed < cfg.iters {
		for posted < cfg.iters && posted-completed < cfg.depth && (s.ready == nil || s.ready(posted)) {
			if err := a.qp.PostSend(s.mk(posted)); err != nil {
				return err
			}
			posted++
		}
		if posted == completed {
			// Nothing in flight: the receiver holds the next slot.
			if err := s.r.moved(); err != nil {
				return err
			}
			continue
		}
		n, err := wait(s.r.context(), a.scq, wcs)
		if err != nil {
			return s.r.cause(err)
		}
		for i := range n {
			if wcs[i].Status != verbs.WCSuccess {
				return fmt.Errorf("work request %d: %v", wcs[i].WRID, wcs[i].Status)
			}
			if err := s.done(completed, &wcs[i]); err != nil {
				return err
			}
			completed++
		}
	}
	return nil
}

// receiver keeps cfg.depth receives posted on b, one per slot, and checks
// each arriving message with check, on a goroutine of its own.
type receiver struct {
	b     *endpoint
	cfg   demoConfig
	check func(i int, wc *verbs.WC) error
	next  atomic.Int64  // message number of the next receive completion
	step  chan struct{} // a value after next moved
	done  chan struct{} // closed when the receiver ends, err set
	err   error
	// ctx is canceled when the receiver fails, which ends the sender's
	// wait: its sends would otherwise stall for want of receives.
	ctx    context.Context
	cancel context.CancelFunc
}

func startReceiver(b *endpoint, cfg demoConfig, check func(int, *verbs.WC) error) (*receiver, error) {
	r := &receiver{b: b, cfg: cfg, check: check, step: make(chan struct{}, 1), done: make(chan struct{})}
	for k := range min(cfg.depth, cfg.iters) {
		if err := r.post(k); err != nil {
			return nil, err
		}
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r, nil
}

// context returns what the sender's waits run under: r's context, or the
// background for a stage without a receiver (r nil).
func (r *receiver) context() context.Context {
	if r == nil {
		return context.Background()
	}
	return r.ctx
}

// cause returns the error that ended the sender's wait: the receiver's if
// it failed first.
func (r *receiver) cause(err error) error {
	if r != nil && errors.Is(err, context.Canceled) {
		<-r.done
		return r.err
	}
	return err
}

func (r *receiver) post(i int) error {
	k := i % r.cfg.depth
	return r.b.qp.PostRecv(&verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{r.b.slot(r.cfg, k)}})
}

func (r *receiver) run() {
	defer func() {
		if r.err != nil {
			r.cancel()
		}
		close(r.done)
	}()
	wcs := make([]verbs.WC, r.cfg.depth)
	for next := 0; next < r.cfg.iters; {
		n, err := wait(context.Background(), r.b.rcq, wcs)
		if err != nil {
			r.err = err
			return
		}
		for j := range n {
			wc := &wcs[j]
			if wc.Status != verbs.WCSuccess || wc.WRID != uint64(next) {
				r.err = fmt.Errorf("receive %d: %v (WR %d)", next, wc.Status, wc.WRID)
				return
			}
			if r.err = r.check(next, wc); r.err != nil {
				return
			}
			if next+r.cfg.depth < r.cfg.iters {
				if r.err = r.post(next + r.cfg.depth); r.err != nil {
					return
				}
			}
			next++
			r.next.Store(int64(next))
		}
		select {
		case r.step <- struct{}{}:
		default:
		}
	}
}

// posted reports whether the receive for message i is posted: the
// receiver posts it once it has taken message i-depth.
func (r *receiver) posted(i int) bool { return i < int(r.next.Load())+r.cfg.depth }

// moved returns once the receiver has taken another message, or with its
// error once it ended.
func (r *receiver) moved() error {
	select {
	case <-r.step:
		return nil
	case <-r.done:
		if r.err == nil {
			return errors.New("receiver ended before the sender")
		}
		return r.err
	}
}

// drain waits for the receiver to take every message.
func (r *receiver) drain() error {
	<-r.done
	r.cancel()
	return r.err
}

func runSend(a, b *endpoint, cfg demoConfig) (int, error) {
	r, err := startReceiver(b, cfg, func(i int, wc *verbs.WC) error {
		if wc.Opcode != verbs.WCRecv || wc.ByteLen != uint32(cfg.size) {
			return fmt.Errorf("receive %d: opcode %v, %d bytes", i, wc.Opcode, wc.ByteLen)
		}
		return checkPattern(b.slotBytes(cfg, i%cfg.depth), i)
	})
	if err != nil {
		return 0, err
	}
	err = pipeline(a, cfg, stage{
		mk: func(i int) *verbs.SendWR {
			k := i % cfg.depth
			pattern(a.slotBytes(cfg, k), i)
			return &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.slot(cfg, k)}}
		},
		done: func(int, *verbs.WC) error { return nil },
		r:    r,
		// A send completes when the peer's NIC took it, before the
		// receiver goroutine has checked it and posted the receive for
		// the send depth places later: without this a sender that
		// runs ahead meets an RNR NAK, and goes back over what it sent
		// after it (doc/protocol.md §8.2).
		ready: r.posted,
	})
	if err != nil {
		return 0, err
	}
	return cfg.size, r.drain()
}

func runWrite(imm bool) func(a, b *endpoint, cfg demoConfig) (int, error) {
	return func(a, b *endpoint, cfg demoConfig) (int, error) {
		op := verbs.WRRDMAWrite
		s := stage{
			mk: func(i int) *verbs.SendWR {
				k := i % cfg.depth
				pattern(a.slotBytes(cfg, k), i)
				return &verbs.SendWR{WRID: uint64(i), Opcode: op, Flags: verbs.SendSignaled, Imm: uint32(i),
					SGList: []verbs.SGE{a.slot(cfg, k)}, RemoteAddr: b.slot(cfg, k).Addr, RKey: b.buf.RKey()}
			},
			done: func(i int, _ *verbs.WC) error { return checkPattern(b.slotBytes(cfg, i%cfg.depth), i) },
		}
		var r *receiver
		if imm {
			op = verbs.WRRDMAWriteWithImm
			var err error
			r, err = startReceiver(b, cfg, func(i int, wc *verbs.WC) error {
				if wc.Opcode != verbs.WCRecvRDMAWithImm || wc.Imm != uint32(i) || wc.ByteLen != uint32(cfg.size) {
					return fmt.Errorf("write-with-imm %d: %+v", i, *wc)
				}
				return checkPattern(b.slotBytes(cfg, i%cfg.depth), i)
			})
			if err != nil {
				return 0, err
			}
			// Checked at the receive side; a slot is written again only
			// after the receiver has checked it, because the data of a
			// multi-packet WRITE lands before its last packet needs a
			// receive.
			s.done = func(int, *verbs.WC) error { return nil }
			s.r = r
			s.ready = r.posted
		}
		err := pipeline(a, cfg, s)
		if err == nil && r != nil {
			err = r.drain()
		}
		return cfg.size, err
	}
}

func runRead(a, b *endpoint, cfg demoConfig) (int, error) {
	for k := range cfg.depth {
		pattern(b.slotBytes(cfg, k), k)
	}
	err := pipeline(a, cfg, stage{
		mk: func(i int) *verbs.SendWR {
			k := i % cfg.depth
			clear(a.slotBytes(cfg, k))
			return &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{a.slot(cfg, k)}, RemoteAddr: b.slot(cfg, k).Addr, RKey: b.buf.RKey()}
		},
		done: func(i int, _ *verbs.WC) error { return checkPattern(a.slotBytes(cfg, i%cfg.depth), i%cfg.depth) },
	})
	return cfg.size, err
}

// runAtomic runs cfg.iters atomics on b's word; mk builds WR i, expect gives
// the value WR i must return, final the word's value at the end.
func runAtomic(a, b *endpoint, cfg demoConfig, mk func(i int) *verbs.SendWR, expect func(i int) uint64, final uint64) (int, error) {
	binary.NativeEndian.PutUint64(b.word.Bytes(), 0)
	err := pipeline(a, cfg, stage{
		mk: func(i int) *verbs.SendWR {
			wr := mk(i)
			wr.WRID, wr.Flags = uint64(i), verbs.SendSignaled
			wr.SGList = []verbs.SGE{a.buf.SGE(i%cfg.depth*8, 8)}
			wr.RemoteAddr, wr.RKey = b.word.Addr(), b.word.RKey()
			return wr
		},
		done: func(i int, _ *verbs.WC) error {
			if got := binary.NativeEndian.Uint64(a.buf.Bytes()[i%cfg.depth*8:]); got != expect(i) {
				return fmt.Errorf("atomic %d returned %d, want %d", i, got, expect(i))
			}
			return nil
		},
	})
	if err == nil {
		if got := binary.NativeEndian.Uint64(b.word.Bytes()); got != final {
			err = fmt.Errorf("target holds %d after the run, want %d", got, final)
		}
	}
	return 8, err
}

func runFetchAdd(a, b *endpoint, cfg demoConfig) (int, error) {
	return runAtomic(a, b, cfg, func(int) *verbs.SendWR {
		return &verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, CompareAdd: 3}
	}, func(i int) uint64 { return uint64(3 * i) }, uint64(3*cfg.iters))
}

func runCmpSwap(a, b *endpoint, cfg demoConfig) (int, error) {
	return runAtomic(a, b, cfg, func(i int) *verbs.SendWR {
		return &verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, CompareAdd: uint64(i), Swap: uint64(i + 1)}
	}, func(i int) uint64 { return uint64(i) }, uint64(cfg.iters))
}
