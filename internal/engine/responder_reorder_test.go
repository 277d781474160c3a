package engine

import (
	"bytes"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// TestHeldBehindReadStream checks a SEND held ahead of a READ that then
// arrives in order: the SEND may not overtake the READ's responses
// (readWaits), so it stays held while the stream runs and runs when the
// stream is done, in the same turn — not after a stall NAK and the
// requester's resend, which is then a duplicate. Nothing is missing
// afterwards, so no NAK follows however long the QP waits.
func TestHeldBehindReadStream(t *testing.T) {
	data := []byte("0123456789abcdef")
	only := out{op: wire.RCReadResponseOnly, psn: 0, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: 1, payload: data}
	runRows(t, []row{{
		name:  "a SEND held behind a READ runs when the stream ends",
		setup: func(t *testing.T, r *pktRig) { copy(r.region[512:], data) },
		steps: []step{
			{in: &pkt{op: wire.RCSendOnly, psn: 1, payload: []byte("held!")}},
			{in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 512, 16)}, want: []out{only}},
			{sleep: 4 * rigProbe},
			{in: &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("held!")}, want: []out{ack(1, 2)}},
			{recv: true},
			{in: &pkt{op: wire.RCSendOnly, psn: 2, ack: true, payload: []byte("next")}, want: []out{ack(2, 3)}},
			{sleep: 4 * rigProbe},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 5}, {104, ib.WCSuccess, ib.WCRecv, 4}},
		counters: map[Counter]uint64{NAKSent: 0, DuplicateRequest: 1, OutOfSeqRequest: 1},
		check: func(t *testing.T, r *pktRig) {
			if got := string(r.region[:4]); got != "next" {
				t.Errorf("region holds %q, want \"next\"", got)
			}
		},
	}})
}

// TestStashAcrossWrap checks that nothing held outlives its PSN: after a
// SEND was held behind a READ stream and ran, the PSNs come round (the
// expected PSN set as 2^24-2 requests in order would leave it, none of
// which touches the stash) and the new requests of the same PSNs run,
// not an old copy.
func TestStashAcrossWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		data := []byte("0123456789abcdef")
		r := newPktRig(t)
		copy(r.region[512:], data)
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 1, payload: []byte("old")})
		r.inject(t, &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 512, 16)})
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("old")}) // a resend
		r.sent()
		checkWCs(t, r, []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}})

		r.qp.mu.Lock()
		r.qp.resp.psn = wire.PSNMask
		r.qp.mu.Unlock()
		for id := uint64(10); id < 13; id++ {
			rw := &RecvWR{WRID: id, SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 512, LKey: ib.LKey(r.key)}}}
			if _, err := r.qp.PostRecv(rw); err != nil {
				t.Fatal(err)
			}
		}
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: wire.PSNMask, payload: []byte("a")})
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 0, payload: []byte("b")})
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("new!")})
		r.sent()
		checkWCs(t, r, []wantWC{{10, ib.WCSuccess, ib.WCRecv, 1}, {11, ib.WCSuccess, ib.WCRecv, 1}, {12, ib.WCSuccess, ib.WCRecv, 4}})
		if got := r.region[:4]; !bytes.Equal(got, []byte("new!")) {
			t.Errorf("the SEND of PSN 1 after the wrap placed %q, want \"new!\"", got)
		}
	})
}
