package engine

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// flowLink is a memconn link that sends by a flow, as a UDPBind on the
// RoCEv2 port does (its one flow is the link itself), and counts the
// rechecks of that flow the engine asks for.
type flowLink struct {
	conn.Bind
	rechecks atomic.Int32
	last     atomic.Int32 // the flow last rechecked
}

func (l *flowLink) OpenFlow(netip.AddrPort) (int, netip.AddrPort) { return 1, l.LocalAddr() }

func (l *flowLink) RecheckFlow(flow int) {
	l.rechecks.Add(1)
	l.last.Store(int32(flow))
}

// PlanIPIDs plans what memconn sends: every datagram with ID 0.
func (l *flowLink) PlanIPIDs(msgs []conn.Message) {
	for i := range msgs {
		msgs[i].IPID, msgs[i].HasIPID = 0, true
	}
}

func withFlowLink(cfg *DeviceConfig, _ *QPCap) { cfg.Bind = &flowLink{Bind: cfg.Bind} }

// wantRechecks returns a row check that the rig's QP had its flow
// rechecked n times.
func wantRechecks(n int32) func(t *testing.T, r *pktRig) {
	return func(t *testing.T, r *pktRig) {
		l := r.dev.bind.(*flowLink)
		if r.qp.flow != 1 {
			t.Fatalf("the QP sends by flow %d, want the link's flow 1", r.qp.flow)
		}
		if got := l.rechecks.Load(); got != n {
			t.Errorf("the flow was rechecked %d times, want %d", got, n)
		}
		if n > 0 && l.last.Load() != 1 {
			t.Errorf("flow %d was rechecked, want the QP's, 1", l.last.Load())
		}
	}
}

// TestFlowRecheck: a QP that sends by a flow has the link learn the
// flow's IPv4 ID count again when its peer shows it lost what the QP
// sent — a local ACK timeout, a request repeated — since a count gone
// wrong loses everything to a peer that checks the ICRC with the ID on
// the wire; traffic without loss rechecks nothing.
func TestFlowRecheck(t *testing.T) {
	runRows(t, []row{{
		name:  "a local ACK timeout rechecks the flow before the retransmission",
		tweak: withFlowLink,
		steps: []step{
			{post: sends(1), want: []out{sendOnly(0, 0)}},
			{sleep: 8192 * time.Nanosecond, want: []out{sendOnly(0, 0)}},
			{in: inACK(0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{LocalACKTimeout: 1},
		check:    wantRechecks(1),
	}, {
		name:  "a repeated request rechecks the flow before the repeated ACK",
		tweak: withFlowLink,
		steps: []step{
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(0, 1)}},
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(0, 1)}},
		},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 3}},
		counters: map[Counter]uint64{DuplicateRequest: 1},
		check:    wantRechecks(1),
	}, {
		name:  "traffic without loss rechecks nothing",
		tweak: withFlowLink,
		steps: []step{
			{post: sends(1), want: []out{sendOnly(0, 0)}},
			{in: inACK(0)},
			{in: &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("one")}, want: []out{ack(0, 1)}},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {0, ib.WCSuccess, ib.WCRecv, 3}},
		counters: map[Counter]uint64{LocalACKTimeout: 0, DuplicateRequest: 0},
		check:    wantRechecks(0),
	}})
}
