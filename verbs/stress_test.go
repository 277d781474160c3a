package verbs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// exercise runs a mix of every operation on one QP pair and verifies each
// result: it is the workload of the concurrency and loss tests.
func exercise(t *testing.T, p *verbstest.Pair, rounds int, seed byte) {
	t.Helper()
	a, b := p.A, p.B
	src, dst := a.Buffer(t, 20000, seed), b.Buffer(t, 20000, 0)
	counter := b.Buffer(t, 8, 0)
	binary.NativeEndian.PutUint64(counter.Bytes(), 0)
	res := a.Buffer(t, 8, 0)
	back := a.Buffer(t, 20000, 0)
	for r := range rounds {
		n := 1 + (r*4099)%19999
		clear(dst.Bytes())
		if err := b.QP.PostRecv(&verbs.RecvWR{WRID: uint64(r), SGList: []verbs.SGE{dst.SGE(0, 20000)}}); err != nil {
			t.Fatal(err)
		}
		post(t, a.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)}})
		if wc := dbgPoll(t, p, b.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || wc.ByteLen != uint32(n) ||
			!bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) {
			logState(t, p)
			t.Fatalf("round %d: SEND of %d bytes: %+v or data differs", r, n, wc)
		}
		clear(dst.Bytes())
		post(t, a.QP, &verbs.SendWR{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
		clear(back.Bytes())
		post(t, a.QP, &verbs.SendWR{WRID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{back.SGE(20000-n, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
		post(t, a.QP, &verbs.SendWR{WRID: 4, Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{res.SGE(0, 8)}, RemoteAddr: counter.Addr(), RKey: counter.RKey(), CompareAdd: 1})
		for i, wc := range dbgPoll(t, p, a.SendCQ, 4) {
			if wc.Status != verbs.WCSuccess || wc.WRID != uint64(i+1) {
				logState(t, p)
				t.Fatalf("round %d: completion %d: %+v", r, i, wc)
			}
		}
		if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) {
			t.Fatalf("round %d: WRITE of %d bytes differs", r, n)
		}
		if !bytes.Equal(back.Bytes()[20000-n:], src.Bytes()[:n]) {
			t.Fatalf("round %d: READ of %d bytes differs", r, n)
		}
		if got := binary.NativeEndian.Uint64(res.Bytes()); got != uint64(r) {
			t.Fatalf("round %d: FETCH_ADD returned %d: an atomic ran twice or not at all", r, got)
		}
	}
	if got := binary.NativeEndian.Uint64(counter.Bytes()); got != uint64(rounds) {
		t.Fatalf("counter %d after %d FETCH_ADDs", got, rounds)
	}
}

// TestConcurrentQPs runs four QP pairs on the same two devices at once;
// meant for -race.
func TestConcurrentQPs(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link})
			pairs := []*verbstest.Pair{p}
			for range 3 {
				pairs = append(pairs, p.Another(t, verbstest.Options{Link: link}))
			}
			var wg sync.WaitGroup
			for i, q := range pairs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					exercise(t, q, 10, byte(i))
				}()
			}
			wg.Wait()
		})
	}
}

// TestLossyFabric runs the workload over a fabric that loses, duplicates,
// reorders and delays packets: retransmission, duplicate detection and the
// atomic replay cache must still deliver every byte exactly once. It runs
// in virtual time, so a loaded machine cannot stall a receiver past the
// retransmission timeouts (in real time a run under -race, with the
// machine's cores taken by other work, spent retry_cnt on a live peer).
func TestLossyFabric(t *testing.T) {
	for _, im := range []memconn.Impairments{
		{Loss: 0.05, Seed: 1},
		{Duplicate: 0.1, Seed: 2},
		{Reorder: 0.1, Seed: 3},
		{Loss: 0.03, Duplicate: 0.03, Reorder: 0.03, Seed: 4},
		{Corrupt: 0.05, Seed: 5},
		{Loss: 0.05, Duplicate: 0.05, Reorder: 0.05, Corrupt: 0.02, Seed: 6},
	} {
		t.Run(fmt.Sprintf("%+v", im), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := verbs.DefaultConnectOptions()
				o.Timeout = 11 // 8.4 ms, so retry_cnt 7 outlasts ~67 ms without progress
				o.RetryCnt = 7
				o.MinRNRTimer = 1
				p := verbstest.New(t, verbstest.Options{Impairments: im, Connect: &o})
				exercise(t, p, 20, 7)
				c := p.A.Dev.Counters()
				t.Logf("requester: %d sent, %d retransmission rounds, %d sequence NAKs; responder: %d duplicates",
					c.Get(verbs.SentPkts), c.Get(verbs.CompleterRetryErr), c.Get(verbs.RcvdSeqErr), p.B.Dev.Counters().Get(verbs.DuplicateRequest))
			})
		})
	}
}

func dbgPoll(t *testing.T, p *verbstest.Pair, cq *verbs.CQ, n int) []verbs.WC {
	t.Helper()
	wcs, err := verbstest.Poll(cq, n, 3*time.Second)
	if err != nil {
		logState(t, p)
		t.Fatal(err, wcs)
	}
	return wcs
}

// logState logs both sides' QP state and counters, to tell a failure's
// cause (timeouts, NAKs, drops) from the log.
func logState(t *testing.T, p *verbstest.Pair) {
	t.Helper()
	t.Logf("A: QP %v, counters %v", p.A.QP.State(), p.A.Dev.Counters())
	t.Logf("B: QP %v, counters %v", p.B.QP.State(), p.B.Dev.Counters())
}
