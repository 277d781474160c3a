package engine

import (
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/ib"
)

// TestQPNRandomBase: two devices do not number their first QPs alike (the
// chance that they do is 2⁻²⁴ per pair, so of eight devices at least two
// distinct bases is certain for a test), and every number is a 24-bit one
// above the reserved range (doc/protocol.md §1.5).
func TestQPNRandomBase(t *testing.T) {
	seen := map[uint32]bool{}
	for range 8 {
		r := newFuzzRig(t)
		q := r.qp.qpn
		if q < firstQPN || q > qpnMask {
			t.Fatalf("QPN %#x outside %#x..%#x", q, firstQPN, qpnMask)
		}
		seen[q] = true
	}
	if len(seen) < 2 {
		t.Fatalf("eight devices all numbered their first QP %v", seen)
	}
}

// TestQPNWrapsUnique: numbers wrap from 2²⁴−1 to the first user number,
// skipping the reserved ones and those in use, and the QP table finds each
// QP by its number.
func TestQPNWrapsUnique(t *testing.T) {
	d := newLoneDevice(t)
	cq, _ := d.CreateCQ(4)
	create := func(from uint32) uint32 {
		t.Helper()
		d.mu.Lock()
		d.nextQPN = from
		d.mu.Unlock()
		qp, err := d.CreateQP(1, &QPInitAttr{Type: ib.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if d.lookupQP(qp.qpn) != qp {
			t.Fatalf("QP %#x not found under its number", qp.qpn)
		}
		return qp.qpn
	}
	for _, c := range []struct{ from, want uint32 }{
		{qpnMask - 1, qpnMask - 1},
		{qpnMask, qpnMask},
		{0, firstQPN},            // reserved numbers skipped
		{qpnMask, firstQPN + 1},  // in use, wraps, skips reserved and in use
		{firstQPN, firstQPN + 2}, // skips those in use
	} {
		if got := create(c.from); got != c.want {
			t.Errorf("from %#x: QPN %#x, want %#x", c.from, got, c.want)
		}
	}
}

// TestFromPeer: a peer on the RoCEv2 port may send from any source port
// (rxe: one per QP); a peer on another port, a device sharing its host, is
// known by address and port (doc/protocol.md §1.2).
func TestFromPeer(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, c := range []struct {
		peer, src string
		want      bool
	}{
		{"10.0.0.2:4791", "10.0.0.2:4791", true},
		{"10.0.0.2:4791", "10.0.0.2:49374", true},
		{"10.0.0.3:4791", "10.0.0.2:4791", false},
		{"127.0.0.1:5000", "127.0.0.1:5000", true},
		{"127.0.0.1:5000", "127.0.0.1:5001", false},
		{"127.0.0.1:5000", "127.0.0.1:4791", false},
		{"127.0.0.2:5000", "127.0.0.1:5000", false},
	} {
		peer := ap(c.peer)
		if got := fromPeer(&peer, ap(c.src)); got != c.want {
			t.Errorf("peer %s, packet from %s: %v, want %v", c.peer, c.src, got, c.want)
		}
	}
	if fromPeer(nil, ap("10.0.0.2:4791")) {
		t.Error("a QP without a peer took a packet")
	}
}

// newLoneDevice opens a device on a memconn network of its own, closed
// when the test ends.
func newLoneDevice(t *testing.T) *Device {
	t.Helper()
	b, err := memconn.NewNetwork(memconn.Options{}).Listen(netip.MustParseAddrPort("10.0.0.1:4791"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDevice(DeviceConfig{Bind: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
