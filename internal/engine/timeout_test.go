package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/ib"
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
