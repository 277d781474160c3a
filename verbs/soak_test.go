package verbs_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

var (
	soak     = flag.Bool("soak", false, "run TestSoak's full 1,000,000 operations (under a minute)")
	soakSeed = flag.Uint64("soak.seed", 11, "TestSoak's seed: of the fabric's impairments and of the operations drawn")
	soakOps  = flag.Int("soak.ops", 0, "TestSoak's operation count, if not 0")
)

// The soak's shape: batches of up to soakBatch operations are posted at
// once, each with its own slot of soakSlot bytes, so nothing in flight
// shares memory; a batch is verified when all its completions are in.
const (
	soakSlot  = 256 << 10 // the largest message, 256 KiB
	soakBatch = 8
)

// TestSoak runs a million (with -soak; 10,000 without, 1,000 with -short)
// random SEND, SEND_WITH_IMM, WRITE, WRITE_WITH_IMM, READ, FETCH_ADD and
// CMP_AND_SWP operations of 0 B to 256 KiB over a fabric that loses 10 %
// (5 % without -soak), duplicates 10 %, reorders 5 % and corrupts 1 % of
// the packets, in the virtual time of a synctest bubble, so every
// retransmission timer fires without waiting. Every completion is checked
// (status, WR ID, opcode, length, immediate), every byte placed is
// compared with its source and the byte after it with a guard, every
// atomic's returned value is the one it must be, and the FETCH_ADD total
// is exact at the end.
//
// Once, halfway, the fabric passes a batch's first few request packets
// and no answer, and that batch must end in RETRY_EXC_ERR. A batch that does is checked
// and the QPs connected again as an application would (recoverBatch):
// what completed is checked in full, and of the rest the responder must
// have executed a prefix that its receives, its atomic words and its
// WRITEs all agree on.
//
// At 10 % loss and 1 % corruption each way a round trip fails one time
// in five (1 - (0.9 × 0.99)² = 0.21), and retry_cnt 7, which goverbs
// reads as seven retries (doc/protocol.md §8.2), is spent by eight
// failed round trips in a row: 0.2^8, 2.6 × 10^-6, for each operation
// only its own answer completes — an atomic, a READ's request, the last
// message of a batch, with nothing behind it to acknowledge it: a few
// hundred thousand of the million. So the full run meets RETRY_EXC_ERR
// about once in a million operations besides the outage — 36 of 60 full
// runs did (-soak.seed 1 to 30, twice) — which is the protocol's limit,
// not a fault: in each of 42 such failures traced, the fabric had lost
// the failing PSN's request or its answer on all eight tries. The run
// allows five a million; a fault that keeps answers from coming makes
// many more. At 5 % loss a round trip fails one time in nine, and eight
// in a row come about once in 10^8 operations: none is allowed.
func TestSoak(t *testing.T) {
	ops, loss := 10_000, 0.05
	if testing.Short() {
		ops = 1000
	}
	if *soak {
		ops, loss = 1_000_000, 0.10
	}
	if *soakOps > 0 {
		ops = *soakOps
	}
	synctest.Test(t, func(t *testing.T) {
		o := verbs.DefaultConnectOptions()
		o.Timeout, o.RetryCnt, o.RNRRetry, o.MinRNRTimer = 11, 7, 7, 1 // 8.4 ms, virtual
		im := memconn.Impairments{Loss: loss, Duplicate: 0.10, Reorder: 0.05, Corrupt: 0.01, Seed: *soakSeed}
		p := verbstest.New(t, verbstest.Options{Impairments: im, Connect: &o,
			Cap: verbs.QPCap{MaxSendWR: 2 * soakBatch, MaxRecvWR: 2 * soakBatch}})
		s := newSoakRig(t, p, o)
		start := time.Now()
		for done := 0; done < ops; {
			n := min(1+s.rng.IntN(soakBatch), ops-done)
			s.batch(t, n, done <= ops/2 && ops/2 < done+n)
			done += n
		}
		s.finish(t)
		// The outage, and at 10 % loss about one in a million operations.
		allowed := 1
		if loss >= 0.10 {
			allowed += max(1, 5*ops/1_000_000)
		}
		if s.failures > allowed {
			t.Errorf("%d batches ended in RETRY_EXC_ERR, want at most %d", s.failures, allowed)
		}
		ca, cb := p.A.Dev.Counters(), p.B.Dev.Counters()
		t.Logf("%d operations, %d MiB, in %v of virtual time, %d RETRY_EXC_ERR (one the outage's); A: %d packets sent, %d retransmitted, %d go-back-N rounds, %d timeouts; B: %d sequence NAKs, %d duplicates, %d bad ICRCs dropped",
			ops, s.bytes>>20, time.Since(start).Round(time.Millisecond), s.failures, ca.Get(verbs.SentPkts), ca.Get(verbs.RetransmittedPkts),
			ca.Get(verbs.CompleterRetryErr), ca.Get(verbs.LocalACKTimeout), cb.Get(verbs.NAKSent), cb.Get(verbs.DuplicateRequest), cb.Get(verbs.DropBadICRC))
	})
}

// soakRig holds the two sides' regions: A's source and READ slots, B's
// WRITE slots, receive slots, READ source and the two atomic words.
type soakRig struct {
	p        *verbstest.Pair
	rng      *rand.Rand
	src      *verbs.MR // A: the bytes every SEND and WRITE is taken from
	back     *verbs.MR // A: READ destinations, a slot per batch entry
	res      *verbs.MR // A: the atomics' returned values, 8 bytes per entry
	dst      *verbs.MR // B: WRITE destinations
	recv     *verbs.MR // B: receive buffers
	rsrc     *verbs.MR // B: the bytes READs fetch
	words    *verbs.MR // B: FETCH_ADD's counter at 0, CMP_AND_SWP's word at 8
	sum, cas uint64    // what B's two words must hold
	bytes    int64
	opts     verbs.ConnectOptions // to connect the QPs again after a failure
	failures int                  // batches that ended in RETRY_EXC_ERR
}

// soakOp is one posted operation and what verifies it.
type soakOp struct {
	op   verbs.WROpcode
	n    int    // bytes
	off  int    // offset into the source region (A's src, or B's rsrc for a READ)
	imm  uint32 // immediate data of the _WITH_IMM operations
	recv int    // the receive slot a SEND consumes, -1 for none
	want uint64 // an atomic's expected returned value
	// FETCH_ADD's addend; CMP_AND_SWP's compare and swap values
	add, cmp, swap uint64
}

func newSoakRig(t *testing.T, p *verbstest.Pair, o verbs.ConnectOptions) *soakRig {
	s := &soakRig{p: p, rng: rand.New(rand.NewPCG(*soakSeed, 0x50a4)), opts: o}
	s.src = p.A.Buffer(t, 2*soakSlot, 0x11)
	s.back = p.A.Buffer(t, soakBatch*soakSlot, 0)
	s.res = p.A.Buffer(t, 8*soakBatch, 0)
	s.dst = p.B.Buffer(t, soakBatch*soakSlot, 0)
	s.recv = p.B.Buffer(t, soakBatch*soakSlot, 0)
	s.rsrc = p.B.Buffer(t, 2*soakSlot, 0x77)
	s.words = p.B.Buffer(t, 16, 0)
	clear(s.words.Bytes())
	return s
}

// size draws a message size: mostly up to 4 KiB, one in ten up to
// 256 KiB, spread over the powers of two; one in fifty is empty.
func (s *soakRig) size() int {
	switch r := s.rng.IntN(50); {
	case r == 0:
		return 0
	case r < 5:
		return 1 + s.rng.IntN(1<<(13+s.rng.IntN(6))) // up to 8 KiB .. 256 KiB
	}
	return 1 + s.rng.IntN(1<<(1+s.rng.IntN(12))) // up to 2 B .. 4 KiB
}

var soakOpcodes = []verbs.WROpcode{verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm,
	verbs.WRRDMARead, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicCmpAndSwp}

// guard is the byte that must stay after every placed message.
const guard = 0xa5

// batch posts n random operations in one chain, then waits for and
// verifies every completion and every byte. With outage the fabric
// passes no answer and only the first few requests, until the retries
// run out.
func (s *soakRig) batch(t *testing.T, n int, outage bool) {
	a, b := s.p.A, s.p.B
	sum0, cas0 := s.sum, s.cas
	ops := make([]soakOp, n)
	wrs := make([]verbs.SendWR, n)
	recvs := 0
	for i := range ops {
		op := &ops[i]
		op.op, op.recv = soakOpcodes[s.rng.IntN(len(soakOpcodes))], -1
		wr := &wrs[i]
		*wr = verbs.SendWR{WRID: uint64(i), Opcode: op.op, Flags: verbs.SendSignaled}
		switch op.op {
		case verbs.WRAtomicFetchAndAdd:
			op.add = s.rng.Uint64() >> 8
			op.want, s.sum = s.sum, s.sum+op.add
			wr.CompareAdd, wr.RemoteAddr, wr.RKey = op.add, s.words.Addr(), s.words.RKey()
			wr.SGList = []verbs.SGE{s.res.SGE(8*i, 8)}
			continue
		case verbs.WRAtomicCmpAndSwp:
			op.want = s.cas // returned whether it swaps or not
			op.cmp, op.swap = s.cas, s.rng.Uint64()
			if s.rng.IntN(4) == 0 {
				op.cmp = ^s.cas // a compare that fails: the word stays
			} else {
				s.cas = op.swap
			}
			wr.CompareAdd, wr.Swap, wr.RemoteAddr, wr.RKey = op.cmp, op.swap, s.words.Addr()+8, s.words.RKey()
			wr.SGList = []verbs.SGE{s.res.SGE(8*i, 8)}
			continue
		}
		op.n, op.off = s.size(), s.rng.IntN(soakSlot)
		s.bytes += int64(op.n)
		if op.op == verbs.WRSendWithImm || op.op == verbs.WRRDMAWriteWithImm {
			op.imm = s.rng.Uint32()
			wr.Imm = op.imm
		}
		var sge verbs.SGE
		switch op.op {
		case verbs.WRRDMARead:
			s.prepare(s.back.Bytes()[i*soakSlot:], op.n)
			sge = s.back.SGE(i*soakSlot, op.n)
			wr.RemoteAddr, wr.RKey = s.rsrc.Addr()+uint64(op.off), s.rsrc.RKey()
		case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
			s.prepare(s.dst.Bytes()[i*soakSlot:], op.n)
			sge = s.src.SGE(op.off, op.n)
			wr.RemoteAddr, wr.RKey = s.dst.Addr()+uint64(i*soakSlot), s.dst.RKey()
		default: // SEND
			sge = s.src.SGE(op.off, op.n)
		}
		if op.n > 0 {
			wr.SGList = []verbs.SGE{sge}
		}
		if op.op == verbs.WRSend || op.op == verbs.WRSendWithImm || op.op == verbs.WRRDMAWriteWithImm {
			op.recv = recvs
			recvs++
			if op.op != verbs.WRRDMAWriteWithImm {
				s.prepare(s.recv.Bytes()[op.recv*soakSlot:], op.n)
			}
			if err := b.QP.PostRecv(&verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{s.recv.SGE(op.recv*soakSlot, soakSlot)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range wrs[:n-1] {
		wrs[i].Next = &wrs[i+1]
	}
	if outage {
		s.p.Net.SetFilter(soakOutage(a.Dev.Addr(), 1+s.rng.Int64N(12)))
	}
	post(t, a.QP, &wrs[0])
	failed := s.checkSends(t, ops, soakPoll(t, s.p, a.SendCQ, n))
	switch {
	case failed >= 0:
		s.recoverBatch(t, ops, failed, recvs, sum0, cas0)
		return
	case outage:
		t.Fatal("the outage ended in no RETRY_EXC_ERR")
	}
	rwcs := soakPoll(t, s.p, b.RecvCQ, recvs)
	for i := range ops {
		s.check(t, i, &ops[i], rwcs)
	}
}

// checkSends checks a batch's send completions: in order, each a success
// of its opcode, or one RETRY_EXC_ERR with every later one flushed. It
// returns the index of the failed one, or -1.
func (s *soakRig) checkSends(t *testing.T, ops []soakOp, wcs []verbs.WC) (failed int) {
	t.Helper()
	failed = -1
	for i, wc := range wcs {
		switch {
		case wc.WRID != uint64(i):
		case failed >= 0 && wc.Status == verbs.WCWRFlushErr:
			continue
		case failed < 0 && wc.Status == verbs.WCRetryExcErr:
			failed = i
			continue
		case failed < 0 && wc.Status == verbs.WCSuccess && wc.Opcode == sendWCOpcode(ops[i].op):
			continue
		}
		logState(t, s.p)
		t.Fatalf("send completion %d of %+v: %+v", i, ops, wc)
	}
	return failed
}

// prepare clears the n bytes a message will fill and sets the guard after
// them.
func (s *soakRig) prepare(b []byte, n int) {
	clear(b[:n])
	if n < soakSlot {
		b[n] = guard
	}
}

// check verifies what operation i of a batch left behind.
func (s *soakRig) check(t *testing.T, i int, op *soakOp, rwcs []verbs.WC) {
	t.Helper()
	if op.op == verbs.WRAtomicFetchAndAdd || op.op == verbs.WRAtomicCmpAndSwp {
		if got := binary.NativeEndian.Uint64(s.res.Bytes()[8*i:]); got != op.want {
			t.Fatalf("entry %d, %v returned %#x, want %#x: an atomic ran twice, or not at all", i, op.op, got, op.want)
		}
		return
	}
	got, want := s.slot(i, op)
	if !bytes.Equal(got[:op.n], want[:op.n]) || (op.n < soakSlot && got[op.n] != guard) {
		t.Fatalf("entry %d, %v of %d bytes: data differs or overran", i, op.op, op.n)
	}
	if op.recv < 0 {
		return
	}
	wc := rwcs[op.recv]
	wantOp, wantFlags := verbs.WCRecv, verbs.WCFlags(0)
	if op.op == verbs.WRRDMAWriteWithImm {
		wantOp = verbs.WCRecvRDMAWithImm
	}
	if op.op != verbs.WRSend {
		wantFlags = verbs.WCFlagWithImm
	}
	if wc.Status != verbs.WCSuccess || wc.WRID != uint64(i) || wc.Opcode != wantOp || wc.ByteLen != uint32(op.n) ||
		wc.Flags&verbs.WCFlagWithImm != wantFlags || (wantFlags != 0 && wc.Imm != op.imm) {
		t.Fatalf("entry %d, %v of %d bytes (imm %#x): receive completion %+v", i, op.op, op.n, op.imm, wc)
	}
}

// slot returns the bytes operation i of a batch places its message in
// and the bytes the message is taken from; nil for an atomic.
func (s *soakRig) slot(i int, op *soakOp) (placed, source []byte) {
	switch op.op {
	case verbs.WRRDMARead:
		return s.back.Bytes()[i*soakSlot:], s.rsrc.Bytes()[op.off:]
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		return s.dst.Bytes()[i*soakSlot:], s.src.Bytes()[op.off:]
	case verbs.WRSend, verbs.WRSendWithImm:
		return s.recv.Bytes()[op.recv*soakSlot:], s.src.Bytes()[op.off:]
	}
	return nil, nil
}

// finish checks the atomic words: the FETCH_ADD total is exact.
func (s *soakRig) finish(t *testing.T) {
	if got := binary.NativeEndian.Uint64(s.words.Bytes()); got != s.sum {
		t.Fatalf("FETCH_ADD counter %#x, want %#x", got, s.sum)
	}
	if got := binary.NativeEndian.Uint64(s.words.Bytes()[8:]); got != s.cas {
		t.Fatalf("CMP_AND_SWP word %#x, want %#x", got, s.cas)
	}
}

// soakPoll waits for n completions; a minute of virtual time without them
// is a hang.
func soakPoll(t *testing.T, p *verbstest.Pair, cq *verbs.CQ, n int) []verbs.WC {
	t.Helper()
	wcs, err := verbstest.Poll(cq, n, time.Minute)
	if err != nil {
		logState(t, p)
		t.Fatal(err, wcs)
	}
	return wcs
}

// sendWCOpcode is the opcode of a send completion of op (ibv_wc_opcode).
func sendWCOpcode(op verbs.WROpcode) verbs.WCOpcode {
	switch op {
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		return verbs.WCRDMAWrite
	case verbs.WRRDMARead:
		return verbs.WCRDMARead
	case verbs.WRAtomicFetchAndAdd:
		return verbs.WCFetchAdd
	case verbs.WRAtomicCmpAndSwp:
		return verbs.WCCompSwap
	}
	return verbs.WCSend
}
