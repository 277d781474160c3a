package engine

import (
	"encoding/binary"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// slowPace paces the rig's READ streams at the pacer's floor, 1 MiB/s,
// with an empty bucket: nothing goes out before virtual time passes.
func slowPace(t *testing.T, r *pktRig) {
	r.qp.mu.Lock()
	r.qp.resp.pace = pacer{rate: paceMinRate, last: monoNow()}
	r.qp.mu.Unlock()
}

// atomicAck is the ATOMIC ACKNOWLEDGE a responder sends.
func atomicAck(psn wire.PSN, msn uint32, orig uint64) out {
	return out{op: wire.RCAtomicAcknowledge, psn: psn, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: msn, orig: orig}
}

// readResp is a READ response of the rig's region from off, with an AETH
// of msn where the opcode has one.
func readResp(r *pktRig, op wire.Opcode, psn wire.PSN, off int, msn uint32) out {
	o := out{op: op, psn: psn, payload: r.region[off : off+256]}
	if op != wire.RCReadResponseMiddle {
		o.syn, o.msn = wire.ACKSyndrome(wire.CreditsUnlimited), msn
	}
	return o
}

// TestDuplicatesPassReadStream checks that a READ stream paced to a crawl
// holds back only what would overtake its responses (doc/protocol.md §7.6):
// a SEND ahead of its turn behind the stream, and one further ahead than
// the stash, wait or go without keeping the duplicates behind them from
// the responder, and a duplicate SEND and atomic of PSNs before the READ
// are answered at once, the atomic from its resource. In the
// million-operation soak the requester's resends of an atomic whose ACK
// was lost waited so behind the stream until retry_cnt ran out. The
// stream then ends, and the SEND held behind it runs.
func TestDuplicatesPassReadStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		for i := range 512 {
			r.region[256+i] = byte(i)
		}
		slowPace(t, r)
		r.sent()
		r.base = r.dev.Counters()
		steps := []struct {
			in   *pkt
			want []out
		}{
			{&pkt{op: wire.RCFetchAdd, psn: 0, ack: true, fill: fetchAdd(1016, 5)}, []out{atomicAck(0, 1, 0)}},
			{&pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("hi")}, []out{ack(1, 2)}},
			{&pkt{op: wire.RCReadRequest, psn: 2, ack: true, fill: rethAt(regionKey, 256, 512)}, nil},
			{&pkt{op: wire.RCSendMiddle, psn: 44, payload: mtuBytes}, nil}, // past the stash: dropped
			{&pkt{op: wire.RCSendOnly, psn: 4, ack: true, payload: []byte("next")}, nil},
			{&pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("hi")}, []out{ack(1, 3)}},
			{&pkt{op: wire.RCFetchAdd, psn: 0, ack: true, fill: fetchAdd(1016, 5)}, []out{atomicAck(0, 3, 0)}},
		}
		for i, s := range steps {
			r.inject(t, s.in)
			if got := r.sent(); len(got) != len(s.want) {
				t.Errorf("step %d (%v PSN %d): %d packets, want %d", i, s.in.op, s.in.psn, len(got), len(s.want))
			} else {
				checkOut(t, got, s.want)
			}
		}
		if _, err := r.qp.PostRecv(&RecvWR{WRID: 1, SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 512, LKey: ib.LKey(r.key)}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		checkOut(t, r.sent(), []out{
			readResp(r, wire.RCReadResponseFirst, 2, 256, 3), readResp(r, wire.RCReadResponseLast, 3, 512, 3), ack(4, 4)})
		checkWCs(t, r, []wantWC{{0, ib.WCSuccess, ib.WCRecv, 2}, {1, ib.WCSuccess, ib.WCRecv, 4}})
		if got := binary.NativeEndian.Uint64(r.region[1016:]); got != 5 {
			t.Errorf("the FETCH_ADD word holds %d, want 5: the duplicate ran again", got)
		}
		now := r.dev.Counters()
		for c, want := range map[Counter]uint64{DuplicateRequest: 2, OutOfSeqRequest: 1, NAKSent: 0} {
			if d := now.Get(c) - r.base.Get(c); d != want {
				t.Errorf("counter %v went up by %d, want %d", c, d, want)
			}
		}
	})
}

// TestDuplicatesAfterReadStream checks the other side of that order: a
// READ asked again streams again, paced, and the duplicates of the SEND
// and the atomic after it are answered only when its responses have gone
// — first the atomic, then an ACK past it — for an ACK before the READ's
// last response would tell the requester the READ was answered in full,
// and one past the atomic before the atomic's, that its answer was lost.
func TestDuplicatesAfterReadStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		for i := range 512 {
			r.region[256+i] = byte(i)
		}
		// Each in a turn of its own: how many one turn takes depends on
		// the scheduling (the race detector's, say), and the SEND's ACK
		// carries the MSN of the turn's end.
		r.inject(t, &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 256, 512)})
		synctest.Wait()
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 2, ack: true, payload: []byte("hi")})
		synctest.Wait()
		r.inject(t, &pkt{op: wire.RCFetchAdd, psn: 3, ack: true, fill: fetchAdd(1016, 5)})
		checkOut(t, r.sent(), []out{readResp(r, wire.RCReadResponseFirst, 0, 256, 1), readResp(r, wire.RCReadResponseLast, 1, 512, 1),
			ack(2, 2), atomicAck(3, 3, 0)})

		slowPace(t, r)
		r.inject(t, &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 256, 512)})
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 2, ack: true, payload: []byte("hi")})
		r.inject(t, &pkt{op: wire.RCFetchAdd, psn: 3, ack: true, fill: fetchAdd(1016, 5)})
		if got := r.sent(); len(got) != 0 {
			t.Errorf("%d packets while the READ asked again waits for the pacer, want none:", len(got))
			checkOut(t, got, nil)
		}
		time.Sleep(10 * time.Millisecond)
		checkOut(t, r.sent(), []out{readResp(r, wire.RCReadResponseFirst, 0, 256, 3), readResp(r, wire.RCReadResponseLast, 1, 512, 3),
			atomicAck(3, 3, 0), ack(3, 3)})
		checkWCs(t, r, []wantWC{{0, ib.WCSuccess, ib.WCRecv, 2}})
		if got := binary.NativeEndian.Uint64(r.region[1016:]); got != 5 {
			t.Errorf("the FETCH_ADD word holds %d, want 5: the duplicate ran again", got)
		}
	})
}
