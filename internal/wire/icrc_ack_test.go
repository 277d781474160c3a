package wire

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestSealACK: an ACK sealed from its base and its fields has the ICRC
// computed over the whole packet, for random PSNs, syndromes and MSNs,
// over IPv4 (several IDs, prepared or not) and IPv6.
func TestSealACK(t *testing.T) {
	v6 := Envelope{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), SrcPort: 0xc001, DstPort: UDPPort}
	v4p := testEnvelope
	v4p.Prepare()
	r := rand.New(rand.NewPCG(5, 6))
	for _, e := range []Envelope{testEnvelope, v4p, v6} {
		for _, id := range []uint16{0, 1, 0xbeef} {
			e.IPID = id
			var b, want [BTHSize + AETHSize + ICRCSize]byte
			f := BTHFields{Opcode: RCAcknowledge, PKey: 0xffff, DestQP: r.Uint32() & 0xffffff}
			p, err := NewPacket(b[:], 0, &f, 0)
			if err != nil {
				t.Fatal(err)
			}
			base := p.ACKICRCBase(&e)
			for range 200 {
				f.PSN = PSN(r.Uint32() & 0xffffff)
				if p, err = NewPacket(b[:], 0, &f, 0); err != nil {
					t.Fatal(err)
				}
				p.AETH().Encode(&AETHFields{Syndrome: Syndrome(r.Uint32()), MSN: r.Uint32() & 0xffffff})
				p.SealACK(base)
				copy(want[:], p)
				Packet(want[:]).SealICRC(&e)
				if p.ICRC() != Packet(want[:]).ICRC() {
					t.Fatalf("%v ID %d PSN %d: SealACK %#x, want %#x", e.Dst, id, f.PSN, p.ICRC(), Packet(want[:]).ICRC())
				}
				if err := p.CheckICRC(&e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
