package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// TestACKTimeoutStart checks that the local ACK timeout runs from the
// transmission of what it covers (IBA 9.7.6.1.3), however late that comes
// after the turn that built the packets.
func TestACKTimeoutStart(t *testing.T) {
	runRows(t, []row{{
		name: "a stall before the link does not shorten the timeout",
		setup: func(t *testing.T, r *pktRig) {
			qpAddr := netip.MustParseAddrPort("10.0.0.1:4791")
			stalled := false
			r.net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
				if d.Src == qpAddr && !stalled {
					stalled = true
					time.Sleep(20 * time.Microsecond) // the 8 µs timeout would pass before the packet leaves
				}
				return memconn.Deliver
			})
		},
		steps: []step{
			{post: sends(1), want: []out{sendOnly(0, 0)}},
			{sleep: 8 * time.Microsecond}, // under the 8.192 µs since it left: no resend
			{in: inACK(0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{LocalACKTimeout: 0, CompleterRetryErr: 0},
	}})
}

// TestGoBackNAcrossPSNZero checks that a go-back-N starts at the first
// unacknowledged PSN when the flight spans PSN 0 (random initial PSNs put
// a connection there every 2^24 PSNs): the start a sequence NAK past a
// READ may leave (seqNAKPastRead) is used only when one did, and a new
// connection's zero was once taken for it, so the timeout resent only the
// LAST packet, from the middle of the message.
func TestGoBackNAcrossPSNZero(t *testing.T) {
	const sq = wire.PSN(0xfffffe)
	runRows(t, []row{{
		name: "the timeout's go-back-N over PSN 0 resends the whole message",
		setup: func(t *testing.T, r *pktRig) {
			r.qp.mu.Lock()
			r.qp.attr.SQPSN = uint32(sq)
			r.qp.enterRTS()
			r.qp.mu.Unlock()
		},
		steps: []step{
			{post: func(r *pktRig) *SendWR {
				return &SendWR{WRID: 1, Opcode: ib.WRSend, Flags: ib.SendSignaled,
					SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 768, LKey: ib.LKey(r.key)}}}
			}, want: []out{
				{op: wire.RCSendFirst, psn: sq, payload: r0(256)},
				{op: wire.RCSendMiddle, psn: sq + 1, payload: r0(256)},
				{op: wire.RCSendLast, psn: 0, payload: r0(256)},
			}},
			{sleep: 8192 * time.Nanosecond, want: []out{
				{op: wire.RCSendFirst, psn: sq, payload: r0(256)},
				{op: wire.RCSendMiddle, psn: sq + 1, payload: r0(256)},
				{op: wire.RCSendLast, psn: 0, payload: r0(256)},
			}},
			{in: inACK(0)},
		},
		wcs: []wantWC{{1, ib.WCSuccess, ib.WCSend, 768}},
	}})
}
