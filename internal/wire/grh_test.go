package wire

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestPutGRHIPv4 builds the GRH of the datagram of rxe-ack.pcap's frame 1
// (testdata/README.md): twenty zero bytes, then its IPv4 header byte for
// byte as the kernel wrote it, checksum included.
func TestPutGRHIPv4(t *testing.T) {
	e := Envelope{Src: netip.MustParseAddr("10.77.0.1"), Dst: netip.MustParseAddr("10.77.0.2"),
		FlagsFragment: FlagDontFragment, SrcPort: 0xc0de, DstPort: UDPPort}
	got := bytes.Repeat([]byte{0xaa}, GRHSize+1)
	PutGRH(got, &e, 80, 0, 64) // 12 BTH + 64 payload + 4 ICRC
	want := append(make([]byte, 20), unhex(t, "45 00 00 6c 00 00 40 00 40 11 25 e5 0a 4d 00 01 0a 4d 00 02")...)
	if !bytes.Equal(got[:GRHSize], want) || got[GRHSize] != 0xaa {
		t.Errorf("GRH\n got % x\nwant % x", got, want)
	}
	// The version nibble libibverbs looks at first is not 6, and the IPv4
	// header's checksum verifies (ibv_init_ah_from_wc).
	if got[0]>>4 == 6 || ipv4Checksum(got[20:40]) != 0 {
		t.Error("libibverbs would not read this GRH as IPv4")
	}
}

// TestPutGRHIPv6 builds an IPv6 GRH: the whole 40 bytes are the header,
// with the ECN bits in the traffic class.
func TestPutGRHIPv6(t *testing.T) {
	e := Envelope{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), SrcPort: 4791, DstPort: UDPPort}
	got := make([]byte, GRHSize)
	PutGRH(got, &e, 100, 2, 64)
	want := unhex(t, "60 20 00 00 00 6c 11 40"+
		"fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01"+
		"fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 02")
	if !bytes.Equal(got, want) {
		t.Errorf("GRH\n got % x\nwant % x", got, want)
	}
}
