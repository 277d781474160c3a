package engine

import (
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
)

// TestReceiveChecks sends one bad packet per receive check (doc/protocol.md §1.4)
// and expects it dropped under its own counter, with nothing accepted.
func TestReceiveChecks(t *testing.T) {
	r := newFuzzRig(t)
	stranger, err := r.net.Listen(netip.MustParseAddrPort("10.0.0.3:4791"))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	good := func(op wire.Opcode) wire.Packet {
		p, _ := wire.NewPacket(make([]byte, 256), 0, &wire.BTHFields{Opcode: op, PKey: 0xffff, DestQP: uint32(r.qp.qpn)}, 4)
		return p
	}
	strangerEnv := r.env
	strangerEnv.Src = netip.MustParseAddr("10.0.0.3")
	for _, c := range []struct {
		name string
		from func() (wire.Packet, *wire.Envelope, bool) // packet, envelope to seal with, from the stranger
		want Counter
	}{
		{"truncated", func() (wire.Packet, *wire.Envelope, bool) { return good(wire.RCSendOnly)[:10], nil, false }, DropMalformed},
		{"bad ICRC", func() (wire.Packet, *wire.Envelope, bool) {
			p := good(wire.RCSendOnly)
			p.SealICRC(&r.env)
			p[len(p)-1] ^= 1
			return p, nil, false
		}, DropBadICRC},
		{"unknown QP", func() (wire.Packet, *wire.Envelope, bool) {
			p := good(wire.RCSendOnly)
			p.BTH().SetDestQP(r.qp.qpn ^ 0x800000) // another number than the rig's one QP
			return p, &r.env, false
		}, DropUnknownQP},
		{"UC opcode on an RC QP", func() (wire.Packet, *wire.Envelope, bool) { return good(wire.UCSendOnly), &r.env, false }, DropWrongTransport},
		{"bad P_Key", func() (wire.Packet, *wire.Envelope, bool) {
			p := good(wire.RCSendOnly)
			p.BTH().SetPKey(0x8001)
			return p, &r.env, false
		}, DropBadPKey},
		{"not from the peer", func() (wire.Packet, *wire.Envelope, bool) { return good(wire.RCSendOnly), &strangerEnv, true }, DropWrongSource},
	} {
		before := r.dev.Counters()
		p, env, fromStranger := c.from()
		if env != nil {
			p.SealICRC(env)
		}
		b := r.peer
		if fromStranger {
			b = stranger
		}
		r.send(t, b, p)
		after := r.dev.Counters()
		want := before.Get(c.want) + 1
		if c.want == DropUnknownQP {
			want++ // send's sentinel
		}
		if after.Get(c.want) != want || after.Get(RcvdPkts) != before.Get(RcvdPkts) {
			t.Errorf("%s: %s %d→%d, rcvd_pkts %d→%d", c.name, c.want, before.Get(c.want), after.Get(c.want),
				before.Get(RcvdPkts), after.Get(RcvdPkts))
		}
	}
}

// TestICRCWithUnseenIPID: over a UDP socket the IPv4 ID is unknown; a
// packet sealed with any ID is accepted, a corrupted one is not, and a link
// that reports the ID gets the strict check.
func TestICRCWithUnseenIPID(t *testing.T) {
	env := wire.Envelope{Src: netip.MustParseAddr("10.77.0.2"), Dst: netip.MustParseAddr("10.77.0.1"),
		FlagsFragment: wire.FlagDontFragment, SrcPort: 0xf67e, DstPort: 4791}
	sealed := env
	sealed.IPID = 0x7ca9
	p, _ := wire.NewPacket(make([]byte, 128), 0, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0xffff, DestQP: 0x11}, 40)
	p.SealICRC(&sealed)
	check := func(m conn.Message) bool { e, run := env, uint16(0); return icrcOK(p, &e, &m, &run, true) }
	if !check(conn.Message{}) {
		t.Error("UDP receive: packet with IP ID 0x7ca9 rejected")
	}
	if check(conn.Message{HasIPID: true, IPID: 0}) || !check(conn.Message{HasIPID: true, IPID: 0x7ca9}) {
		t.Error("a link that knows the ID must get the strict check")
	}
	p.Payload()[3] ^= 0x10
	if check(conn.Message{}) {
		t.Error("corrupted packet accepted")
	}
}

// TestIPIDGuesses: ipidGuesses names the IPv4 ID of every packet after the
// first of the streams a peer sends — single datagrams counting up (rxe, a
// flow's lone sends) and GSO runs, whose sends take one ID each from the
// flow's count and whose segments number on from it: a ping-pong's answer
// and ACK (runs of two), a 64 KiB WRITE stream (runs of 2 and 14), a mix —
// across the 16-bit wrap.
func TestIPIDGuesses(t *testing.T) {
	for _, c := range []struct {
		name string
		runs []int
	}{
		{"single datagrams", []int{1, 1, 1, 1}},
		{"ping-pong runs of two", []int{2, 2, 2, 2}},
		{"64 KiB WRITEs", []int{2, 14, 2, 14, 2, 14}},
		{"mixed", []int{1, 15, 3, 1, 2, 1}},
	} {
		next := uint16(0xfffd) // the flow's count, about to wrap
		var last, run uint16
		for i, k := range c.runs {
			first := next
			next++
			for j := range k {
				id := first + uint16(j)
				if i > 0 || j > 0 {
					if g, a := ipidGuesses(last, run, j == 0); id != g && id != a {
						t.Errorf("%s: run %d, packet %d: ID %#04x, guesses %#04x and %#04x", c.name, i, j, id, g, a)
					}
				}
				last = id
				if j == 0 {
					run = id
				}
			}
		}
	}
}
