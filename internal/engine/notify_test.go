package engine

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// TestNotifyArming: an armed CQ raises one event, for the completion that
// its request names (ibv_req_notify_cq, IBA 11.4.2.2): any for a plain
// request; a solicited or failed one for a solicited-only request, which
// a plain request widens and which does not narrow a plain one. An
// unarmed CQ raises none.
func TestNotifyArming(t *testing.T) {
	cq := newCQ(nil, 64)
	events := 0
	cq.SetEventHandler(func() { events++ })
	ok := &WC{Status: ib.WCSuccess}
	failed := &WC{Status: ib.WCRemAccessErr}
	steps := []struct {
		arm, solicitedOnly bool
		wc                 *WC
		solicited          bool
		want               int
	}{
		{wc: ok, want: 0},                                                  // unarmed
		{arm: true, wc: ok, want: 1},                                       // next completion
		{wc: ok, want: 1},                                                  // once per arm
		{arm: true, solicitedOnly: true, wc: ok, want: 1},                  // not solicited
		{wc: ok, solicited: true, want: 2},                                 // solicited
		{arm: true, solicitedOnly: true, wc: failed, want: 3},              // failed counts
		{arm: true, solicitedOnly: true, want: 3},                          // arm only
		{arm: true, wc: ok, want: 4},                                       // widened to next
		{arm: true, want: 4},                                               // arm only
		{arm: true, solicitedOnly: true, wc: ok, want: 5},                  // stays next
		{arm: true, solicitedOnly: true, wc: ok, solicited: true, want: 6}, // solicited
	}
	for i, s := range steps {
		if s.arm {
			if err := cq.ReqNotify(s.solicitedOnly); err != nil {
				t.Fatal(err)
			}
		}
		if s.wc != nil && !cq.pushSolicited(s.wc, s.solicited) {
			t.Fatalf("step %d: CQ full", i)
		}
		if events != s.want {
			t.Fatalf("step %d: %d events, want %d", i, events, s.want)
		}
	}
	cq.Close()
	if err := cq.ReqNotify(false); err != ErrClosed {
		t.Errorf("arming a closed CQ: %v, want ErrClosed", err)
	}
}
