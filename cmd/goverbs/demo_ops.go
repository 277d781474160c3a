package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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

// stage drives one operation: mk builds send WR i; done checks its
// completion; progress (optional) runs the peer's receive side between
// polls; ready (optional) says whether WR i may be posted yet.
type stage struct {
	mk       func(i int) *verbs.SendWR
	done     func(i int, wc *verbs.WC) error
	progress func() error
	ready    func(i int) bool
}

// pipeline posts cfg.iters send WRs on a, keeping cfg.depth outstanding,
// and hands each completion, in order, to s.done.
func pipeline(a *endpoint, cfg demoConfig, s stage) error {
	wcs := make([]verbs.WC, cfg.depth)
	posted, completed := 0, 0
	idle := time.Now()
	for completed < cfg.iters {
		// The peer's receives first, so they are posted again before
		// more sends arrive for them.
		if s.progress != nil {
			if err := s.progress(); err != nil {
				return err
			}
		}
		for posted < cfg.iters && posted-completed < cfg.depth && (s.ready == nil || s.ready(posted)) {
			if err := a.qp.PostSend(s.mk(posted)); err != nil {
				return err
			}
			posted++
		}
		n, err := a.scq.Poll(wcs)
		if err != nil {
			return err
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
		if n > 0 {
			idle = time.Now()
		} else if time.Since(idle) > 10*time.Second {
			return errStalled
		}
	}
	return nil
}

// receiver keeps cfg.depth receives posted on b, one per slot, and checks
// each arriving message with check.
type receiver struct {
	b     *endpoint
	cfg   demoConfig
	next  int // message number of the next receive completion
	check func(i int, wc *verbs.WC) error
	wcs   []verbs.WC
}

func newReceiver(b *endpoint, cfg demoConfig, check func(int, *verbs.WC) error) (*receiver, error) {
	r := &receiver{b: b, cfg: cfg, check: check, wcs: make([]verbs.WC, cfg.depth)}
	for k := range min(cfg.depth, cfg.iters) {
		if err := r.post(k); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *receiver) post(i int) error {
	k := i % r.cfg.depth
	return r.b.qp.PostRecv(&verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{r.b.slot(r.cfg, k)}})
}

func (r *receiver) progress() error {
	n, err := r.b.rcq.Poll(r.wcs)
	if err != nil {
		return err
	}
	for j := range n {
		wc := &r.wcs[j]
		if wc.Status != verbs.WCSuccess || wc.WRID != uint64(r.next) {
			return fmt.Errorf("receive %d: %v (WR %d)", r.next, wc.Status, wc.WRID)
		}
		if err := r.check(r.next, wc); err != nil {
			return err
		}
		if r.next+r.cfg.depth < r.cfg.iters {
			if err := r.post(r.next + r.cfg.depth); err != nil {
				return err
			}
		}
		r.next++
	}
	return nil
}

// drain waits for the receives still due after the sender finished.
func (r *receiver) drain() error {
	for start := time.Now(); r.next < r.cfg.iters; {
		if err := r.progress(); err != nil {
			return err
		}
		if time.Since(start) > 10*time.Second {
			return errStalled
		}
	}
	return nil
}

func runSend(a, b *endpoint, cfg demoConfig) (int, error) {
	r, err := newReceiver(b, cfg, func(i int, wc *verbs.WC) error {
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
		done:     func(int, *verbs.WC) error { return nil },
		progress: r.progress,
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
			r, err = newReceiver(b, cfg, func(i int, wc *verbs.WC) error {
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
			s.progress = r.progress
			s.ready = func(i int) bool { return i < r.next+cfg.depth }
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

// atomic runs cfg.iters atomics on b's word; mk builds WR i, expect gives
// the value WR i must return, final the word's value at the end.
func atomic(a, b *endpoint, cfg demoConfig, mk func(i int) *verbs.SendWR, expect func(i int) uint64, final uint64) (int, error) {
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
	return atomic(a, b, cfg, func(int) *verbs.SendWR {
		return &verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, CompareAdd: 3}
	}, func(i int) uint64 { return uint64(3 * i) }, uint64(3*cfg.iters))
}

func runCmpSwap(a, b *endpoint, cfg demoConfig) (int, error) {
	return atomic(a, b, cfg, func(i int) *verbs.SendWR {
		return &verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, CompareAdd: uint64(i), Swap: uint64(i + 1)}
	}, func(i int) uint64 { return uint64(i) }, uint64(cfg.iters))
}
