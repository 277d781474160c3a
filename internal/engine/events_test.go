package engine

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// TestEventsBounded: raising an event never blocks; past the device's
// room events are dropped and counted.
func TestEventsBounded(t *testing.T) {
	r := newFuzzRig(t)
	d := r.dev
	const extra = 50
	for range eventDepth + extra {
		d.raise(Event{Type: ib.EventCommEst, QP: r.qp})
	}
	// PORT_ACTIVE came first, so extra+1 did not fit.
	if got := d.Counters()[AsyncEventDropped]; got != extra+1 {
		t.Errorf("async_event_dropped = %d, want %d", got, extra+1)
	}
	if ev := <-d.Events(); ev.Type != ib.EventPortActive {
		t.Errorf("first event %v, want PORT_ACTIVE", ev.Type)
	}
	if n := len(d.Events()); n != eventDepth-1 {
		t.Errorf("%d events held, want %d", n, eventDepth-1)
	}
}

// TestSRQTakeAllocs: taking from an SRQ and posting to it allocate nothing.
func TestSRQTakeAllocs(t *testing.T) {
	r := newFuzzRig(t)
	s, err := r.dev.CreateSRQ(1, SRQAttr{MaxWR: 4, MaxSGE: 2})
	if err != nil {
		t.Fatal(err)
	}
	wr := &RecvWR{WRID: 1, SGList: []SGE{{Addr: 1, Length: 8, LKey: 1}, {Addr: 9, Length: 8, LKey: 1}}}
	dst := recvWQE{sge: make([]SGE, 0, 2)}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := s.PostRecv(wr); err != nil {
			t.Fatal(err)
		}
		if !s.take(&dst) || dst.length != 16 {
			t.Fatal("take")
		}
	}); n != 0 {
		t.Errorf("%v allocations per post and take", n)
	}
}
