package engine

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/internal/wire"
)

// TestOutcomeNames: every completer phase and responder outcome prints.
func TestOutcomeNames(t *testing.T) {
	if len(compPhaseNames) != int(compStray)+1 || len(respOutcomeNames) != int(errRecvProt)+1 {
		t.Fatalf("name tables: %d phases, %d outcomes", len(compPhaseNames), len(respOutcomeNames))
	}
	for ph := range compPhase(len(compPhaseNames)) {
		if ph.String() == "" {
			t.Errorf("completer phase %d has no name", ph)
		}
	}
	for o := range respOutcome(len(respOutcomeNames)) {
		if o.String() == "" {
			t.Errorf("responder outcome %d has no name", o)
		}
	}
}

// TestTraceDecisions: with a trace set, the responder reports the outcome
// of each request and the completer each phase a response goes through.
func TestTraceDecisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		var got []string
		r.qp.SetTrace(func(e TraceEvent) { got = append(got, e.String()) })
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 3, ack: true, payload: []byte("x")})
		r.inject(t, &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("x")})
		if _, err := r.qp.PostSend(sends(1)(r)); err != nil {
			t.Fatal(err)
		}
		r.sent()
		r.inject(t, inNAK(wire.NAKRemoteAccess, 0))
		r.sent()
		q := fmt.Sprintf("qp 0x%06x", r.qp.qpn)
		want := []string{
			q + " responder RC_SEND_ONLY psn 3: PSN sequence NAK",
			q + " responder RC_SEND_ONLY psn 0: done",
			q + " completer RC_ACKNOWLEDGE psn 0: check PSN",
			q + " completer RC_ACKNOWLEDGE psn 0: check ACK",
			q + " completer RC_ACKNOWLEDGE psn 0: fail (remote access error)",
			q + " completer RC_ACKNOWLEDGE psn 0: update",
		}
		if !slices.Equal(got, want) {
			t.Errorf("trace:\n%q\nwant\n%q", got, want)
		}
	})
}

// traceRig is a QP whose responder has sent its sequence NAK, so that the
// packets below only run the roles' checks and the trace: a request past
// the expected PSN, dropped quietly, and a response for a PSN before any
// sent, a duplicate.
func traceRig(tb testing.TB) (r *fuzzRig, req, resp wire.Packet) {
	r = newFuzzRig(tb)
	req, _ = wire.NewPacket(make([]byte, 64), 0, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: defaultPKey, PSN: 9}, 0)
	resp, _ = wire.NewPacket(make([]byte, 64), 0, &wire.BTHFields{Opcode: wire.RCAcknowledge, PKey: defaultPKey, PSN: wire.PSNMask}, 0)
	r.qp.mu.Lock()
	r.qp.respond(req, monoNow())
	r.qp.mu.Unlock()
	return r, req, resp
}

// TestTraceAllocations: tracing off allocates nothing; neither does it on,
// up to what the TraceFunc does (it formats nothing itself).
func TestTraceAllocations(t *testing.T) {
	r, req, resp := traceRig(t)
	qp := r.qp
	qp.mu.Lock()
	defer qp.mu.Unlock()
	now := monoNow()
	run := func() {
		qp.respond(req, monoNow())
		qp.complete(resp, now)
	}
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Errorf("trace off: %v allocations per request and response", n)
	}
	events := 0
	qp.trace = func(TraceEvent) { events++ }
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Errorf("trace on: %v allocations per request and response", n)
	}
	if events == 0 {
		t.Error("no trace events")
	}
}

// BenchmarkTrace measures the roles' checks with the trace off and on (a
// TraceFunc that only counts); compare the two, not absolute times.
func BenchmarkTrace(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			r, req, resp := traceRig(b)
			qp := r.qp
			qp.mu.Lock()
			defer qp.mu.Unlock()
			if on {
				qp.trace = func(TraceEvent) {}
			}
			now := monoNow()
			b.ReportAllocs()
			for b.Loop() {
				qp.respond(req, monoNow())
				qp.complete(resp, now)
			}
		})
	}
}
