package wire

import (
	"net/netip"
	"testing"
)

func TestICRCReferenceVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		want uint32
	}{
		{"ConnectX CNP", vectorCNP, 0x2a00fd82},
		{"scapy UC SEND_ONLY", vectorUCSend, 0xf353f378},
		{"RC SEND_ONLY hello", vectorRCSend, 0xd8d08e7d},
		{"RC ACK", vectorRCACK, 0xb6588e2d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, p := splitIPv4(t, unhex(t, tc.hex))
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := p.ICRC(); got != tc.want {
				t.Errorf("trailer = %#08x, want %#08x", got, tc.want)
			}
			if got := p.ComputeICRC(&e); got != tc.want {
				t.Errorf("computed ICRC = %#08x, want %#08x", got, tc.want)
			}
			if err := p.CheckICRC(&e); err != nil {
				t.Errorf("CheckICRC: %v", err)
			}
		})
	}
}

// TestICRCMasks changes each field the ICRC masks and each field it covers,
// and checks that only the covered ones change the CRC (doc/protocol.md §4.1).
func TestICRCMasks(t *testing.T) {
	e, p := splitIPv4(t, unhex(t, vectorRCSend))
	base := p.ComputeICRC(&e)

	masked := append(Packet(nil), p...)
	masked.BTH().SetFECN(true)
	masked.BTH().SetBECN(true)
	masked[bthECN] |= 0x3f // resv6
	if got := masked.ComputeICRC(&e); got != base {
		t.Errorf("FECN/BECN/resv6 changed the ICRC: %#x != %#x", got, base)
	}

	covered := map[string]func(*Envelope, Packet){
		"IP ID":        func(e *Envelope, _ Packet) { e.IPID = 1 },
		"IP flags":     func(e *Envelope, _ Packet) { e.FlagsFragment = 0 },
		"source IP":    func(e *Envelope, _ Packet) { e.Src = netip.MustParseAddr("192.168.1.3") },
		"dest IP":      func(e *Envelope, _ Packet) { e.Dst = netip.MustParseAddr("192.168.1.3") },
		"UDP src port": func(e *Envelope, _ Packet) { e.SrcPort++ },
		"UDP dst port": func(e *Envelope, _ Packet) { e.DstPort++ },
		"MigReq":       func(_ *Envelope, p Packet) { p.BTH().SetMigReq(true) },
		"resv7":        func(_ *Envelope, p Packet) { p[bthAckReq] |= 1 },
		"PSN":          func(_ *Envelope, p Packet) { p.BTH().SetPSN(7) },
		"payload":      func(_ *Envelope, p Packet) { p.Payload()[0] ^= 1 },
		"pad":          func(_ *Envelope, p Packet) { p[len(p)-ICRCSize-1] = 1 },
	}
	for name, change := range covered {
		e2, p2 := e, append(Packet(nil), p...)
		change(&e2, p2)
		if got := p2.ComputeICRC(&e2); got == base {
			t.Errorf("%s is not covered by the ICRC", name)
		}
	}
}

// TestICRCIPv6 checks the IPv6 pseudo-header against the definition written
// out by hand: masked version/class/flow word, payload length, next header,
// masked hop limit and both addresses.
func TestICRCIPv6(t *testing.T) {
	_, p := splitIPv4(t, unhex(t, vectorRCSend))
	e := Envelope{
		Src:     netip.MustParseAddr("fd00::1"),
		Dst:     netip.MustParseAddr("fd00::2"),
		SrcPort: 0xdf94, DstPort: UDPPort,
	}
	udpLen := 8 + len(p)
	pseudo := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x6f, 0xff, 0xff, 0xff, byte(udpLen >> 8), byte(udpLen), 17, 0xff}
	src, dst := e.Src.As16(), e.Dst.As16()
	pseudo = append(pseudo, src[:]...)
	pseudo = append(pseudo, dst[:]...)
	pseudo = append(pseudo, 0xdf, 0x94, 0x12, 0xb7, byte(udpLen>>8), byte(udpLen), 0xff, 0xff)
	bth := append([]byte(nil), p[:BTHSize]...)
	bth[4] = 0xff
	pseudo = append(pseudo, bth...)
	pseudo = append(pseudo, p[BTHSize:len(p)-ICRCSize]...)
	want := crcIEEE(pseudo)
	if got := p.ComputeICRC(&e); got != want {
		t.Errorf("IPv6 ICRC = %#08x, want %#08x", got, want)
	}
	if e.IPv4() {
		t.Error("fd00::1 taken for IPv4")
	}
	mapped := Envelope{Src: netip.MustParseAddr("::ffff:192.168.1.1"), Dst: netip.MustParseAddr("::ffff:192.168.1.2"),
		FlagsFragment: FlagDontFragment, SrcPort: 0xdf94, DstPort: UDPPort}
	if got := p.ComputeICRC(&mapped); got != 0xd8d08e7d {
		t.Errorf("IPv4-mapped addresses: ICRC %#08x, want the IPv4 vector's 0xd8d08e7d", got)
	}
}

// TestICRCPreparedChanged: an envelope changed after Prepare (but for its
// IPID, which each packet's ICRC takes as it is) is not sealed with the
// register of what it was.
func TestICRCPreparedChanged(t *testing.T) {
	b := []byte(benchPacket(t, RCSendOnly, 8))
	b = b[:len(b)-ICRCSize]
	e := testEnvelope
	e.Prepare()
	for name, change := range map[string]func(*Envelope){
		"source":      func(e *Envelope) { e.Src = netip.MustParseAddr("192.168.1.9") },
		"destination": func(e *Envelope) { e.Dst = netip.MustParseAddr("fd00::2") },
		"flags":       func(e *Envelope) { e.FlagsFragment = 0 },
		"ports":       func(e *Envelope) { e.SrcPort, e.DstPort = e.DstPort, e.SrcPort },
	} {
		c := e
		change(&c)
		if got, want := ICRC(&c, b), refICRC(&c, b); got != want {
			t.Errorf("%s changed after Prepare: ICRC %#08x, reference %#08x", name, got, want)
		}
	}
}
