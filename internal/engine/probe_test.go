package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// r0 is what a WRITE of n bytes from the start of the rig's zeroed region
// carries.
func r0(n int) []byte { return make([]byte, n) }

// measured gives the rig's QP a round trip, as if one had been measured:
// its probe time is then half the 8.192 µs ACK timeout.
func measured(t *testing.T, r *pktRig) {
	r.qp.mu.Lock()
	r.qp.comp.srtt = time.Microsecond
	r.qp.mu.Unlock()
}

// probeTime of the measured rig: minProbe is more than half the ACK
// timeout.
const rigProbe = 4096 * time.Nanosecond

// TestTailProbePackets checks the two shortcuts for a loss at the end of a
// flight (probe.go): the requester sends its last packet again once, asking
// for an ACK, when nothing was acknowledged for a probe time; the responder
// NAKs the PSN it expects when packets it holds past a gap sit a probe
// time with nothing more coming, and so does a message under way without
// a gap if requests came out of sequence lately, but not otherwise (a
// duplicate is no sign of loss). Neither acts before a round trip is measured.
func TestTailProbePackets(t *testing.T) {
	half := bytes.Repeat([]byte{0xcd}, 256)
	runRows(t, []row{{
		name:  "the last SEND's ACK is lost: its packet goes again, once, and the ACK completes both",
		setup: measured,
		steps: []step{
			{post: sends(2), want: []out{sendOnly(0, 0), sendOnly(1, 1)}},
			{sleep: rigProbe - time.Nanosecond},
			{sleep: time.Nanosecond, want: []out{sendOnly(1, 1)}},
			{in: inACK(1)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {2, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{RetransmittedPkts: 1, CompleterRetryErr: 0, LocalACKTimeout: 0},
	}, {
		name: "the window stopped the flight inside a WRITE: its last packet sent is the probe",
		setup: func(t *testing.T, r *pktRig) {
			measured(t, r)
			r.qp.mu.Lock()
			r.qp.req.win.size = 2
			r.qp.mu.Unlock()
		},
		steps: []step{
			{post: func(r *pktRig) *SendWR {
				return &SendWR{WRID: 1, Opcode: ib.WRRDMAWrite, Flags: ib.SendSignaled, RemoteAddr: peerVA, RKey: peerRKey,
					SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 768, LKey: ib.LKey(r.key)}}}
			}, want: []out{{op: wire.RCWriteFirst, psn: 0, payload: r0(768)[:256]}, {op: wire.RCWriteMiddle, psn: 1, payload: r0(768)[256:512]}}},
			{sleep: rigProbe, want: []out{{op: wire.RCWriteMiddle, psn: 1, payload: r0(768)[256:512]}}},
			{in: inACK(1), want: []out{{op: wire.RCWriteLast, psn: 2, payload: r0(768)[512:]}}},
			{in: inACK(2)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMAWrite, 768}},
		counters: map[Counter]uint64{RetransmittedPkts: 1, LocalACKTimeout: 0},
	}, {
		name:  "one probe per flight: then the ACK timeout goes back",
		setup: measured,
		steps: []step{
			{post: sends(1), want: []out{sendOnly(0, 0)}},
			{sleep: rigProbe, want: []out{sendOnly(0, 0)}},
			{sleep: 8192*time.Nanosecond - rigProbe, want: []out{sendOnly(0, 0)}},
			{in: inACK(0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{RetransmittedPkts: 2, CompleterRetryErr: 1, LocalACKTimeout: 1},
	}, {
		name:  "a SEND under way without a gap gets no NAK, however long its sender pauses",
		setup: measured,
		steps: []step{
			{in: &pkt{op: wire.RCSendFirst, psn: 0, payload: mtuBytes}},
			{sleep: 4 * rigProbe},
			{in: &pkt{op: wire.RCSendLast, psn: 1, ack: true, payload: half}, want: []out{ack(1, 1)}},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 512}},
		counters: map[Counter]uint64{NAKSent: 0},
	}, {
		name:  "a duplicate request is no sign of loss: a SEND under way after one gets no NAK",
		setup: measured,
		steps: []step{
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(0, 1)}},
			{recv: true},
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(0, 1)}},
			{in: &pkt{op: wire.RCSendFirst, psn: 1, payload: mtuBytes}},
			{sleep: 4 * rigProbe},
			{in: &pkt{op: wire.RCSendLast, psn: 2, ack: true, payload: half}, want: []out{ack(2, 2)}},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}, {101, ib.WCSuccess, ib.WCRecv, 512}},
		counters: map[Counter]uint64{NAKSent: 0, DuplicateRequest: 1},
	}, {
		name:  "on a path that lost a request lately, a SEND under way that stalls gets the NAK",
		setup: measured,
		steps: []step{
			{recv: true},
			{recv: true},
			{in: &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("two")}, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(1, 2)}},
			{in: &pkt{op: wire.RCSendFirst, psn: 2, payload: mtuBytes}},
			{sleep: rigProbe, want: []out{nak(wire.NAKPSNSequenceError, 3, 2)}},
			{in: &pkt{op: wire.RCSendLast, psn: 3, ack: true, payload: half}, want: []out{ack(3, 3)}},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}, {100, ib.WCSuccess, ib.WCRecv, 3}, {101, ib.WCSuccess, ib.WCRecv, 512}},
		counters: map[Counter]uint64{NAKSent: 2, OutOfSeqRequest: 1},
	}, {
		name:  "a gap's NAK may be lost: a probe time after the last arrival without the gap filled, it goes again",
		setup: measured,
		steps: []step{
			{in: &pkt{op: wire.RCWriteMiddle, psn: 1, ack: true, payload: mtuBytes}, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{sleep: rigProbe, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{sleep: 2 * rigProbe}, // nothing arrives: nothing more is sent
			{in: &pkt{op: wire.RCWriteMiddle, psn: 1, ack: true, payload: mtuBytes}}, // a tail probe, say
			{sleep: rigProbe, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
		},
		counters: map[Counter]uint64{NAKSent: 3, OutOfSeqRequest: 2},
	}, {
		name:  "WRITE packets held past a gap, and none asks for an ACK: the stall NAK asks for the gap",
		setup: measured,
		steps: []step{
			{in: &pkt{op: wire.RCWriteMiddle, psn: 1, payload: half}},
			{sleep: rigProbe, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{sleep: rigProbe}, // one NAK
			{in: &pkt{op: wire.RCWriteFirst, psn: 0, payload: mtuBytes, fill: rethAt(regionKey, 0, 768)}, want: []out{ack(0, 0)}},
			{in: &pkt{op: wire.RCWriteLast, psn: 2, ack: true, payload: mtuBytes}, want: []out{ack(2, 1)}},
		},
		counters: map[Counter]uint64{NAKSent: 1, OutOfSeqRequest: 1},
		check: func(t *testing.T, r *pktRig) {
			if !bytes.Equal(r.region[:256], mtuBytes) || !bytes.Equal(r.region[256:512], half) || !bytes.Equal(r.region[512:768], mtuBytes) {
				t.Errorf("WRITE placed %x", r.region[:768])
			}
		},
	}})
}

// The probe time: two smoothed round trips, an eighth of the ACK timeout
// before one is measured, within 200 µs and half the timeout; none
// without the timer. A NAK's round trip — until the packet it asked for
// arrives — is measured too, so a responder whose QP sends nothing gets
// one.
func TestProbeTime(t *testing.T) {
	qp := &QP{attr: QPAttr{Timeout: 14}} // 67.1 ms
	for _, c := range []struct {
		srtt, want time.Duration
	}{
		{0, 8388608 * time.Nanosecond},
		{time.Millisecond, 2 * time.Millisecond},
		{10 * time.Microsecond, minProbe},
		{40 * time.Millisecond, 33554432 * time.Nanosecond},
	} {
		qp.comp.srtt = c.srtt
		if got := qp.probeTime(); got != c.want {
			t.Errorf("srtt %v: probe time %v, want %v", c.srtt, got, c.want)
		}
	}
	qp.attr.Timeout = 0
	if got := qp.probeTime(); got != 0 {
		t.Errorf("timeout 0: probe time %v, want none", got)
	}
	var c completer
	for _, d := range []time.Duration{8 * time.Millisecond, 0, 16 * time.Millisecond} {
		c.smooth(d)
	}
	if c.srtt != 9*time.Millisecond {
		t.Errorf("srtt %v after samples of 8 ms, none and 16 ms, want 9 ms", c.srtt)
	}
}

// A responder that NAKs a gap measures the round trip until the packet
// it asked for comes.
func TestNAKRoundTrip(t *testing.T) {
	runRows(t, []row{{
		name: "NAK round trip",
		steps: []step{
			{in: &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("two")}, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{recv: true},
			{sleep: 3 * time.Microsecond},
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(1, 2)}},
		},
		wcs: []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}, {101, ib.WCSuccess, ib.WCRecv, 3}},
		check: func(t *testing.T, r *pktRig) {
			r.qp.mu.Lock()
			defer r.qp.mu.Unlock()
			if r.qp.comp.srtt != 3*time.Microsecond {
				t.Errorf("srtt %v after a NAK answered in 3 µs, want 3 µs", r.qp.comp.srtt)
			}
		},
	}})
}

// READ requests a network moved ahead of others are held for their turn,
// without a NAK, and answered in PSN order; if the gap stays, the stall
// NAK asks for it.
func TestReadRequestAheadHeld(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 2)
	only := func(psn wire.PSN, msn uint32, b []byte) out {
		return out{op: wire.RCReadResponseOnly, psn: psn, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: msn, payload: b}
	}
	runRows(t, []row{{
		name:  "held, then answered in order",
		setup: func(t *testing.T, r *pktRig) { copy(r.region, data) },
		steps: []step{
			{in: &pkt{op: wire.RCReadRequest, psn: 1, ack: true, fill: rethAt(regionKey, 16, 16)}},
			{in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 16)},
				want: []out{only(0, 1, data[:16]), only(1, 2, data[16:])}},
		},
		counters: map[Counter]uint64{NAKSent: 0, OutOfSeqRequest: 1},
	}, {
		name: "held, and the gap stays: the stall NAK",
		setup: func(t *testing.T, r *pktRig) {
			copy(r.region, data)
			measured(t, r)
		},
		steps: []step{
			{in: &pkt{op: wire.RCReadRequest, psn: 1, ack: true, fill: rethAt(regionKey, 16, 16)}},
			{sleep: rigProbe, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 16)},
				want: []out{only(0, 1, data[:16]), only(1, 2, data[16:])}},
		},
		counters: map[Counter]uint64{NAKSent: 1, OutOfSeqRequest: 1},
	}, {
		// The local ACK timeout is the requester's: a QP with none of
		// its own (timeout 0, or one that only responds, in RTR) still
		// owes the NAK, which a held READ never draws on arrival; it
		// sent none, and the peer waited for its own timer, or for
		// ever without one.
		name: "held, and the gap stays, on a QP without a local ACK timer",
		setup: func(t *testing.T, r *pktRig) {
			copy(r.region, data)
			r.qp.mu.Lock()
			r.qp.attr.Timeout = 0
			r.qp.mu.Unlock()
		},
		steps: []step{
			{in: &pkt{op: wire.RCReadRequest, psn: 1, ack: true, fill: rethAt(regionKey, 16, 16)}},
			{sleep: noTimerStall - time.Nanosecond},
			{sleep: time.Nanosecond, want: []out{nak(wire.NAKPSNSequenceError, 0, 0)}},
			{in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 16)},
				want: []out{only(0, 1, data[:16]), only(1, 2, data[16:])}},
		},
		counters: map[Counter]uint64{NAKSent: 1, OutOfSeqRequest: 1},
	}})
}

// srttIs checks the smoothed round trip the rig's QP measured.
func srttIs(want time.Duration) func(t *testing.T, r *pktRig) {
	return func(t *testing.T, r *pktRig) {
		r.qp.mu.Lock()
		defer r.qp.mu.Unlock()
		if got := r.qp.comp.srtt; got != want {
			t.Errorf("srtt %v, want %v", got, want)
		}
	}
}

// TestRoundTripSamples checks Karn's rule: an answer that may answer
// either of two sendings measures no round trip. Timed from the first
// sending, the ACK of a probed packet counted the probe time in (srtt
// 1.387 µs for a 1 µs path), and the response to a READ asked again the
// reorder window, so every loss widened the probe time and the READ
// windows of the lossy paths they are for.
func TestRoundTripSamples(t *testing.T) {
	b := newBigReads()
	four := [2]uint32{0, 1024}
	runRows(t, []row{{
		name:  "the ACK of a probed packet",
		setup: measured,
		steps: []step{
			{post: sends(2), want: []out{sendOnly(0, 0), sendOnly(1, 1)}},
			{sleep: rigProbe, want: []out{sendOnly(1, 1)}},
			{in: inACK(1)},
		},
		wcs:   []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {2, ib.WCSuccess, ib.WCSend, 8}},
		check: srttIs(time.Microsecond),
	}, {
		name:  "the first response of a READ asked again",
		setup: b.setup,
		steps: seq([]step{{post: b.read(four), want: []out{ask(0, 0, 1024)}}},
			b.resps(0, 0, 1024, 1, 2, 3),
			[]step{
				{sleep: 2048 * time.Nanosecond, want: []out{ask(0, 0, 256)}},
				{sleep: time.Microsecond},
				{in: b.resp(0, 0, 1024, 0)},
			}),
		wcs:   []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 1024}},
		check: srttIs(0),
	}})
}
