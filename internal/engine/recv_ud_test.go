package engine

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// rxeUDSend is the UD SEND ONLY of internal/wire/testdata/rxe-ud-send.pcap
// as captured: the IPv4 header rxe's kernel wrote, then the UDP payload
// (61 bytes of 0x7b, pad 3).
// It came from UDP port 57236 (0xdf94).
var rxeUDSend = struct{ ip, packet string }{
	ip: "45 00 00 74 38 7b 40 00 40 11 ed 61 0a 4d 00 02 0a 4d 00 01",
	packet: "64 30 ff ff 00 00 0a bc 00 7a f8 7e 11 11 11 11 00 00 00 11" +
		" 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b" +
		" 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b 7b" +
		" 00 00 00 86 12 47 1d",
}

// TestDatagramGRH takes rxe's UD packet as a UDP socket delivers it —
// without its IP header, so without its IPv4 identification — through the
// ICRC check and into the inbound form of a GRH service: the GRH must be
// the IP header rxe sent, byte for byte, the ID found from the ICRC.
func TestDatagramGRH(t *testing.T) {
	ip, pkt := unhexBytes(t, rxeUDSend.ip), unhexBytes(t, rxeUDSend.packet)
	m := conn.Message{Buf: pkt, N: len(pkt), Addr: netip.MustParseAddrPort("10.77.0.2:57236")}
	env := wire.Envelope{Src: m.Addr.Addr(), Dst: netip.MustParseAddr("10.77.0.1"),
		FlagsFragment: wire.FlagDontFragment, SrcPort: m.Addr.Port(), DstPort: wire.UDPPort}
	if run := uint16(0); !icrcOK(wire.Packet(pkt), &env, &m, &run, true) || env.IPID != 0x387b {
		t.Fatalf("ICRC check: IPv4 ID %#x, want 0x387b", env.IPID)
	}
	in := (&Device{}).datagram(&m, &env)
	defer in.free()
	if g := in.grh(); !bytes.Equal(g[:20], make([]byte, 20)) || !bytes.Equal(g[20:], ip) {
		t.Errorf("GRH\n got % x\nwant 20 zero bytes, then % x", g, ip)
	}
	if !bytes.Equal(in.p, pkt) {
		t.Error("the packet changed on its way into the inbound form")
	}
}

func unhexBytes(tb testing.TB, s string) []byte {
	tb.Helper()
	var b []byte
	for _, f := range bytes.Fields([]byte(s)) {
		var v byte
		for _, c := range f {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= c - '0'
			case c >= 'a' && c <= 'f':
				v |= c - 'a' + 10
			default:
				tb.Fatalf("bad hex %q", f)
			}
		}
		b = append(b, v)
	}
	return b
}

// TestUnackedReceiveChecks sends a UC and a UD QP what their receive
// checks refuse — the other service's opcodes, a wrong Q_Key, a datagram
// too long for any MTU — and a UC packet asking for an ACK, which gets
// none: UC never answers.
func TestUnackedReceiveChecks(t *testing.T) {
	uc, ud := newFuzzRigType(t, ib.QPTypeUC), newFuzzRigType(t, ib.QPTypeUD)
	packet := func(op wire.Opcode, n int, qkey uint32) []byte {
		p, err := wire.NewPacket(make([]byte, pktBufSize), 0, &wire.BTHFields{Opcode: op, PKey: 0xffff, AckRequest: true}, n)
		if err != nil {
			t.Fatal(err)
		}
		if d := p.DETH(); d != nil {
			d.Encode(&wire.DETHFields{QKey: qkey, SrcQP: fuzzPeerQPN})
		}
		return p
	}
	for _, c := range []struct {
		r    *fuzzRig
		data []byte
		want Counter
	}{
		{uc, packet(wire.UDSendOnly, 8, fuzzQKey), DropWrongTransport},
		{uc, packet(wire.RCSendOnly, 8, 0), DropWrongTransport},
		{ud, packet(wire.UCSendOnly, 8, 0), DropWrongTransport},
		{ud, packet(wire.UDSendOnly, 8, fuzzQKey+1), DropBadQKey},
		{ud, packet(wire.UDSendOnly, maxDatagram, fuzzQKey), DropMalformed},
	} {
		before := c.r.dev.Counters().Get(c.want)
		c.r.inject(t, c.data)
		if got := c.r.dev.Counters().Get(c.want); got != before+1 {
			t.Errorf("%v to a %v QP: %v %d -> %d", wire.Packet(c.data).Opcode(), c.r.typ, c.want, before, got)
		}
	}
	uc.inject(t, packet(wire.UCSendOnly, 8, 0))
	wcs := make([]WC, 4)
	if n, _ := uc.cq.Poll(wcs); n != 1 || wcs[0].Status != ib.WCSuccess || wcs[0].ByteLen != 8 {
		t.Fatalf("UC SEND ONLY: %d completions %+v", n, wcs[0])
	}
	if c := uc.dev.Counters(); c.Get(SentPkts) != 0 || c.Get(ACKSent) != 0 {
		t.Errorf("the UC QP answered a packet with AckReq: sent_pkts %d", c.Get(SentPkts))
	}
}
