package engine

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// bigReads gives a row READs longer than the rig's region allows: a
// 4 KiB local buffer, registered at setup, and the 4 KiB the peer's
// responses carry, byte i of the peer's region at peerVA+i.
type bigReads struct {
	buf, data []byte
}

func newBigReads() *bigReads {
	b := &bigReads{buf: make([]byte, 4096), data: make([]byte, 4096)}
	for i := range b.data {
		b.data[i] = byte('a' + i%23)
	}
	return b
}

func (b *bigReads) setup(t *testing.T, r *pktRig) {
	reg, err := r.dev.MRs().Register(1, b.buf, ib.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	r.key2 = reg.Key()
}

// setupRetries is setup with the QP's retry_cnt at n, so that a test
// runs out of retries in a few timeouts.
func (b *bigReads) setupRetries(n uint8) func(*testing.T, *pktRig) {
	return func(t *testing.T, r *pktRig) {
		b.setup(t, r)
		r.qp.mu.Lock()
		r.qp.attr.RetryCnt, r.qp.comp.retryCnt = n, n
		r.qp.mu.Unlock()
	}
}

// read posts signaled READs, wr_ids 1, 2, …, each of n bytes of the peer's
// region at off into the same offset of buf.
func (b *bigReads) read(reads ...[2]uint32) func(r *pktRig) *SendWR {
	return func(r *pktRig) *SendWR {
		var head *SendWR
		for i := len(reads) - 1; i >= 0; i-- {
			off, n := reads[i][0], reads[i][1]
			head = &SendWR{WRID: uint64(i + 1), Opcode: ib.WRRDMARead, Flags: ib.SendSignaled, Next: head,
				RemoteAddr: peerVA + uint64(off), RKey: peerRKey,
				SGList: []SGE{{Addr: mem.AddrOf(b.buf) + uint64(off), Length: n, LKey: ib.LKey(r.key2)}}}
		}
		return head
	}
}

// resp is response i of a READ of n bytes at off whose first PSN is first
// (path MTU 256).
func (b *bigReads) resp(first wire.PSN, off, n uint32, i int) *pkt {
	k := max(1, (n+255)/256)
	lo := off + 256*uint32(i)
	hi := min(lo+256, off+n)
	op := readResponseOpcodes[positionOf(i > 0, off+n-lo, 256)]
	if k == 1 {
		op = wire.RCReadResponseOnly
	}
	return inRead(op, first.Add(uint32(i)), b.data[lo:hi])
}

// resps are steps that inject responses i... of a READ of n bytes at off
// whose first PSN is first, with nothing sent in answer.
func (b *bigReads) resps(first wire.PSN, off, n uint32, i ...int) []step {
	s := make([]step, len(i))
	for k, j := range i {
		s[k] = step{in: b.resp(first, off, n, j)}
	}
	return s
}

// seq joins runs of steps.
func seq(runs ...[]step) []step {
	var s []step
	for _, r := range runs {
		s = append(s, r...)
	}
	return s
}

// ask is the READ request that asks again, at PSN psn, for n bytes of the
// peer's region at off.
func ask(psn wire.PSN, off, n uint32) out {
	return out{op: wire.RCReadRequest, psn: psn, reth: &wire.RETHFields{VA: peerVA + uint64(off), RKey: peerRKey, DMALength: n}}
}

// landed checks that buf holds the peer's bytes over the READs.
func (b *bigReads) landed(reads ...[2]uint32) func(t *testing.T, r *pktRig) {
	return func(t *testing.T, _ *pktRig) {
		for _, rd := range reads {
			off, n := rd[0], rd[1]
			if !bytes.Equal(b.buf[off:off+n], b.data[off:off+n]) {
				t.Errorf("READ of %d bytes at %d placed %q, want %q", n, off, b.buf[off:off+n], b.data[off:off+n])
			}
		}
	}
}

// TestReadRecoveryPackets checks READ recovery response by response
// (doc/protocol.md §8.3): responses are placed where they belong in or out
// of order; a READ is asked again, from its first missing response to the
// end of that gap, only when the stream shows that response lost —
// dupThresh responses after it, each right after one in, or one response
// past it and the reorder window (a quarter of the rig's 8.192 µs ACK
// timeout, as no round trip is measured in virtual time) — and again only
// when what the ask's own answer brings shows that lost too, or the
// answers to later requests do, or askWait (here the reorder window) goes
// by without the answer; nothing else is sent again.
func TestReadRecoveryPackets(t *testing.T) {
	const reorder = 2048 * time.Nanosecond
	six, eight := [2]uint32{0, 1536}, [2]uint32{0, 2048}
	b1 := newBigReads()
	b2 := newBigReads()
	b3 := newBigReads()
	b4 := newBigReads()
	b5 := newBigReads()
	b6 := newBigReads()
	b7 := newBigReads()
	b8 := newBigReads()
	b9 := newBigReads()
	short, long := [2]uint32{0, 16}, [2]uint32{256, 768}
	a3, c3 := [2]uint32{0, 768}, [2]uint32{768, 768}
	runRows(t, []row{{
		name:  "three responses past a lost one ask for it at once; its arrival completes the READ",
		setup: b1.setup,
		steps: seq([]step{{post: b1.read(six), want: []out{ask(0, 0, 1536)}}},
			b1.resps(0, 0, 1536, 0, 2, 3, 4), // 1 lost; 2 follows a gap: no evidence
			[]step{
				{in: b1.resp(0, 0, 1536, 5), want: []out{ask(1, 256, 256)}},
				{in: b1.resp(0, 0, 1536, 1)},
			}),
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 1536}},
		counters: map[Counter]uint64{CompleterRetryErr: 1, RetransmittedPkts: 1, LocalACKTimeout: 0, DropUnexpectedResponse: 0},
		check:    b1.landed(six),
	}, {
		name:  "a gap the stream passed with fewer behind it is asked for after the reorder window",
		setup: b2.setup,
		steps: []step{
			{post: b2.read(a3), want: []out{ask(0, 0, 768)}},
			{in: b2.resp(0, 0, 768, 0)},
			{in: b2.resp(0, 0, 768, 2)},
			{sleep: reorder - time.Nanosecond},
			{sleep: time.Nanosecond, want: []out{ask(1, 256, 256)}},
			{in: b2.resp(0, 0, 768, 1)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 768}},
		counters: map[Counter]uint64{CompleterRetryErr: 1, LocalACKTimeout: 0},
		check:    b2.landed(a3),
	}, {
		name:  "a gap of several responses is asked for whole, and the answer's own stream shows its first response lost",
		setup: b3.setup,
		steps: seq([]step{{post: b3.read(eight), want: []out{ask(0, 0, 2048)}}},
			b3.resps(0, 0, 2048, 0, 4, 5, 6), // 1-3 lost
			[]step{
				{in: b3.resp(0, 0, 2048, 7), want: []out{ask(1, 256, 768)}},
				{in: b3.resp(0, 0, 2048, 2)}, // the answer, its first response lost
				{in: b3.resp(0, 0, 2048, 3), want: []out{ask(1, 256, 256)}},
				{in: b3.resp(0, 0, 2048, 1)},
			}),
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 2048}},
		counters: map[Counter]uint64{CompleterRetryErr: 2, LocalACKTimeout: 0},
		check:    b3.landed(eight),
	}, {
		name:  "the first stream's stragglers after the ask are no reason to ask again",
		setup: b4.setup,
		steps: seq([]step{{post: b4.read(eight), want: []out{ask(0, 0, 2048)}}},
			b4.resps(0, 0, 2048, 0, 2, 3, 4),
			[]step{{in: b4.resp(0, 0, 2048, 5), want: []out{ask(1, 256, 256)}}},
			b4.resps(0, 0, 2048, 6, 7, 1)),
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 2048}},
		counters: map[Counter]uint64{CompleterRetryErr: 1, LocalACKTimeout: 0},
		check:    b4.landed(eight),
	}, {
		name:  "an ACK past a READ that missed its response: the READ is asked again, the SEND behind it is not",
		setup: b5.setup,
		steps: []step{
			{post: func(r *pktRig) *SendWR {
				wr := b5.read(short)(r)
				wr.Next = sends(1)(r)
				wr.Next.WRID = 2
				return wr
			}, want: []out{ask(0, 0, 16), sendOnly(1, 0)}},
			{in: inACK(1)},
			{sleep: reorder, want: []out{ask(0, 0, 16)}},
			{in: b5.resp(0, 0, 16, 0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}, {2, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{CompleterRetryErr: 1, RetransmittedPkts: 1, LocalACKTimeout: 0},
		check:    b5.landed(short),
	}, {
		name:  "a later READ's responses are placed while an earlier one waits for its own",
		setup: b6.setup,
		steps: []step{
			{post: b6.read(short, long), want: []out{ask(0, 0, 16), ask(1, 256, 768)}},
			{in: b6.resp(1, 256, 768, 0)},
			{in: b6.resp(1, 256, 768, 1)},
			{sleep: reorder, want: []out{ask(0, 0, 16)}},
			{in: b6.resp(1, 256, 768, 2)},
			{in: b6.resp(0, 0, 16, 0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}, {2, ib.WCSuccess, ib.WCRDMARead, 768}},
		counters: map[Counter]uint64{CompleterRetryErr: 1, RetransmittedPkts: 1, LocalACKTimeout: 0},
		check:    b6.landed(short, long),
	}, {
		name:  "the answers to a request sent after the ask show its answer lost",
		setup: b7.setup,
		steps: []step{
			{post: b7.read(a3), want: []out{ask(0, 0, 768)}},
			{in: b7.resp(0, 0, 768, 0)},
			{in: b7.resp(0, 0, 768, 2)},
			{sleep: reorder, want: []out{ask(1, 256, 256)}},
			{post: func(r *pktRig) *SendWR {
				wr := b7.read(c3)(r)
				wr.WRID = 2
				return wr
			}, want: []out{ask(3, 768, 768)}},
			{in: b7.resp(3, 768, 768, 0)},
			{in: b7.resp(3, 768, 768, 1)},
			{in: b7.resp(3, 768, 768, 2), want: []out{ask(1, 256, 256)}},
			{in: b7.resp(0, 0, 768, 1)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 768}, {2, ib.WCSuccess, ib.WCRDMARead, 768}},
		counters: map[Counter]uint64{CompleterRetryErr: 2, LocalACKTimeout: 0},
		check:    b7.landed(a3, c3),
	}, {
		name:  "an answer that nothing shows lost is asked for again after askWait, before the ACK timeout",
		setup: b8.setup,
		steps: []step{
			{post: b8.read(short, long), want: []out{ask(0, 0, 16), ask(1, 256, 768)}},
			{in: b8.resp(1, 256, 768, 0)},
			{in: b8.resp(1, 256, 768, 1)},
			{in: b8.resp(1, 256, 768, 2)},
			{sleep: reorder, want: []out{ask(0, 0, 16)}},
			{sleep: reorder, want: []out{ask(0, 0, 16)}},
			{in: b8.resp(0, 0, 16, 0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}, {2, ib.WCSuccess, ib.WCRDMARead, 768}},
		counters: map[Counter]uint64{CompleterRetryErr: 2, LocalACKTimeout: 0},
		check:    b8.landed(short, long),
	}, {
		name: "the timeout asks every READ again for what it misses, and only that",
		setup: func(t *testing.T, r *pktRig) {
			b9.setup(t, r)
			r.qp.mu.Lock()
			r.qp.comp.srtt = 8192 * time.Nanosecond // askWait: half the ACK timeout, 4.096 µs
			r.qp.mu.Unlock()
		},
		steps: []step{
			{post: b9.read(a3, c3), want: []out{ask(0, 0, 768), ask(3, 768, 768)}},
			{in: b9.resp(0, 0, 768, 0)},
			{in: b9.resp(3, 768, 768, 0)},
			{in: b9.resp(3, 768, 768, 1)},
			{sleep: reorder, want: []out{ask(1, 256, 512)}},
			// Nothing more comes: askWait asks again, then the ACK
			// timeout (8.192 µs after the last response) goes back to
			// the first READ's gap, and asks the second READ for its
			// last response.
			{sleep: 8192*time.Nanosecond - reorder, want: []out{ask(1, 256, 512), ask(1, 256, 512), ask(5, 1280, 256)}},
			{in: b9.resp(0, 0, 768, 1)},
			{in: b9.resp(0, 0, 768, 2)},
			{in: b9.resp(3, 768, 768, 2)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 768}, {2, ib.WCSuccess, ib.WCRDMARead, 768}},
		counters: map[Counter]uint64{CompleterRetryErr: 3, LocalACKTimeout: 1},
		check:    b9.landed(a3, c3),
	}})
}

// An atomic ACK past a READ that missed its response is placed at once;
// the READ is asked again, and the atomic completes after it, in order.
func TestReadRecoveryAtomicAhead(t *testing.T) {
	b := newBigReads()
	runRows(t, []row{{
		name:  "atomic result ahead of a READ",
		setup: b.setup,
		steps: []step{
			{post: func(r *pktRig) *SendWR {
				wr := b.read([2]uint32{0, 16})(r)
				wr.Next = &SendWR{WRID: 2, Opcode: ib.WRAtomicFetchAndAdd, Flags: ib.SendSignaled, RemoteAddr: peerVA, RKey: peerRKey,
					CompareAdd: 3, SGList: []SGE{{Addr: mem.AddrOf(r.region) + atomicOff, Length: 8, LKey: ib.LKey(r.key)}}}
				return wr
			}, want: []out{ask(0, 0, 16), {op: wire.RCFetchAdd, psn: 1}}},
			{in: &pkt{op: wire.RCAtomicAcknowledge, psn: 1, fill: func(_ *pktRig, p wire.Packet) {
				p.AETH().SetSyndrome(wire.ACKSyndrome(wire.CreditsUnlimited))
				p.AtomicAckETH().SetOrigData(0x0102030405060708)
			}}},
			{sleep: 2048 * time.Nanosecond, want: []out{ask(0, 0, 16)}},
			{in: b.resp(0, 0, 16, 0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}, {2, ib.WCSuccess, ib.WCFetchAdd, 8}},
		counters: map[Counter]uint64{CompleterRetryErr: 1, LocalACKTimeout: 0},
		check: func(t *testing.T, r *pktRig) {
			b.landed([2]uint32{0, 16})(t, r)
			if v := binary.NativeEndian.Uint64(r.region[atomicOff:]); v != 0x0102030405060708 {
				t.Errorf("original value 0x%x placed", v)
			}
		},
	}})
}

// A sequence NAK past a READ still waiting for its response goes back to
// the NAK's PSN only: the responder has every request before it, the READ
// included, whose response comes, or is asked for, on its own.
func TestSeqNAKPastRead(t *testing.T) {
	b := newBigReads()
	runRows(t, []row{{
		name:  "sequence NAK past a READ",
		setup: b.setup,
		steps: []step{
			{post: func(r *pktRig) *SendWR {
				wr := b.read([2]uint32{0, 16})(r)
				wr.Next = sends(2)(r)
				wr.Next.WRID, wr.Next.Next.WRID = 2, 3
				return wr
			}, want: []out{ask(0, 0, 16), sendOnly(1, 0), sendOnly(2, 1)}},
			{in: inNAK(wire.NAKPSNSequenceError, 2), want: []out{sendOnly(2, 1)}},
			{in: b.resp(0, 0, 16, 0)},
			{in: inACK(2)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}, {2, ib.WCSuccess, ib.WCSend, 8}, {3, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{NAKRcvd: 1, RcvdSeqErr: 1, CompleterRetryErr: 1, RetransmittedPkts: 1},
		check:    b.landed([2]uint32{0, 16}),
	}})
}

// A sequence NAK past a READ during a go-back-N starts nothing, and leaves
// nothing behind: the next timeout goes back to the READ again (the
// million-operation soak failed a READ with RETRY_EXC_ERR when the NAK's
// PSN stayed as where a later go-back-N started).
func TestSeqNAKPastReadDuringRetry(t *testing.T) {
	b := newBigReads()
	runRows(t, []row{{
		name:  "NAK during a go-back-N, then a timeout",
		setup: b.setupRetries(3),
		steps: []step{
			{post: func(r *pktRig) *SendWR {
				wr := b.read([2]uint32{0, 16})(r)
				wr.Next = sends(2)(r)
				wr.Next.WRID, wr.Next.Next.WRID = 2, 3
				return wr
			}, want: []out{ask(0, 0, 16), sendOnly(1, 0), sendOnly(2, 1)}},
			{sleep: 8192 * time.Nanosecond, want: []out{ask(0, 0, 16), sendOnly(1, 0), sendOnly(2, 1)}},
			{in: inNAK(wire.NAKPSNSequenceError, 2)},
			{sleep: 8192 * time.Nanosecond, want: []out{ask(0, 0, 16), sendOnly(1, 0), sendOnly(2, 1)}},
			{in: b.resp(0, 0, 16, 0)},
			{in: inACK(2)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}, {2, ib.WCSuccess, ib.WCSend, 8}, {3, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{LocalACKTimeout: 2, CompleterRetryErr: 2},
	}})
}

// TestPastResponsesDuringRetry: an atomic whose ACK is lost, behind which
// a READ's response arrives, goes back N; when the resend's answer is
// lost too, responses past the atomic that keep coming (a READ asked
// again is answered again and again) must not push the ACK timer out,
// or the atomic is never sent a third time.
func TestPastResponsesDuringRetry(t *testing.T) {
	b := newBigReads()
	fetchAdd := out{op: wire.RCFetchAdd, psn: 0}
	steps := []step{
		{post: func(r *pktRig) *SendWR {
			rd := b.read([2]uint32{0, 16})(r)
			rd.WRID = 2
			return &SendWR{WRID: 1, Opcode: ib.WRAtomicFetchAndAdd, Flags: ib.SendSignaled, RemoteAddr: peerVA, RKey: peerRKey,
				CompareAdd: 3, SGList: []SGE{{Addr: mem.AddrOf(r.region) + atomicOff, Length: 8, LKey: ib.LKey(r.key)}}, Next: rd}
		}, want: []out{fetchAdd, ask(1, 0, 16)}},
		{in: b.resp(1, 0, 16, 0), want: []out{fetchAdd, ask(1, 0, 16)}},
	}
	for range 4 { // 8 µs of answers past the atomic, the ACK timeout 8.192 µs
		steps = append(steps, step{sleep: 2 * time.Microsecond}, step{in: b.resp(1, 0, 16, 0)})
	}
	steps = append(steps,
		step{sleep: time.Microsecond, want: []out{fetchAdd, ask(1, 0, 16)}},
		step{in: &pkt{op: wire.RCAtomicAcknowledge, psn: 0, fill: func(_ *pktRig, p wire.Packet) {
			p.AETH().SetSyndrome(wire.ACKSyndrome(wire.CreditsUnlimited))
			p.AtomicAckETH().SetOrigData(7)
		}}},
		step{in: b.resp(1, 0, 16, 0)},
	)
	runRows(t, []row{{
		name:     "the timeout resends a lost atomic while READ answers pass it",
		setup:    b.setupRetries(3),
		steps:    steps,
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCFetchAdd, 8}, {2, ib.WCSuccess, ib.WCRDMARead, 16}},
		counters: map[Counter]uint64{LocalACKTimeout: 1, CompleterRetryErr: 2},
		check:    b.landed([2]uint32{0, 16}),
	}})
}

// TestSeqNAKInsideRead: a sequence NAK names the PSN the responder
// expects next, and no responder expects one inside a READ, whose PSNs it
// takes all at once (doc/protocol.md §6.3). Taken as true, it moved the
// completer's expected PSN over the READ's missing response, which the
// go-back-N then never asked for, and the READ completed with a hole.
// It is dropped: the READ completes with every byte its responses bring.
func TestSeqNAKInsideRead(t *testing.T) {
	b := newBigReads()
	runRows(t, []row{{
		name:  "a sequence NAK inside a READ is dropped",
		setup: b.setup,
		steps: seq([]step{
			{post: b.read([2]uint32{0, 768}), want: []out{ask(0, 0, 768)}},
			{in: b.resp(0, 0, 768, 0)},
			{in: inNAK(wire.NAKPSNSequenceError, 2)},
		}, b.resps(0, 0, 768, 2, 1)),
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 768}},
		counters: map[Counter]uint64{CompleterRetryErr: 0, DropUnexpectedResponse: 1},
		check:    b.landed([2]uint32{0, 768}),
	}})
}
