package wire

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

// Reference datagrams (IPv4 header onwards) from doc/protocol.md §4.4.
var (
	// Example A: a CNP captured from a ConnectX-4 Lx (scapy's roce.uts).
	vectorCNP = "45c2003c718c400040119161 0a001101 0a001201 000012b700280000" +
		"8100ffff4000011800000000 00000000000000000000000000000000 82fd002a"
	// Example B: scapy's UC SEND_ONLY with M=1 and pad 2.
	vectorUCSend = "450100400478400040 11b4d5 c0a80007 c0a80007 c00012b7002c0000" +
		"2460ffff000000d300cf1710 4630818be28935d90e9a95505401be885e500000 78f353f3"
	// Example C: RC SEND_ONLY "hello" from QP 0x11 to 0x12 and its ACK.
	vectorRCSend = "45000034000040004011b765c0a80101c0a80102df9412b700200000" +
		"0430ffff0000001280000000 68656c6c6f000000 7d8ed0d8"
	vectorRCACK = "45000030000040004011b769c0a80102c0a80101f80612b7001c0000" +
		"1100ffff0000001100000000 1f000001 2d8e58b6"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splitIPv4 cuts an IPv4+UDP datagram into the envelope the ICRC needs and
// the transport packet. It is a test helper for well-formed vectors only.
func splitIPv4(t testing.TB, d []byte) (Envelope, Packet) {
	t.Helper()
	if len(d) < 28 || d[0] != 0x45 || d[9] != 17 {
		t.Fatalf("not an IPv4/UDP datagram: % x", d[:min(len(d), 28)])
	}
	e := Envelope{
		Src:           netip.AddrFrom4([4]byte(d[12:16])),
		Dst:           netip.AddrFrom4([4]byte(d[16:20])),
		IPID:          binary.BigEndian.Uint16(d[4:]),
		FlagsFragment: binary.BigEndian.Uint16(d[6:]),
		SrcPort:       binary.BigEndian.Uint16(d[20:]),
		DstPort:       binary.BigEndian.Uint16(d[22:]),
	}
	if got, want := int(binary.BigEndian.Uint16(d[24:])), len(d)-20; got != want {
		t.Fatalf("UDP length %d, datagram holds %d", got, want)
	}
	return e, Packet(d[28:])
}
