package wire

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// ICRCSize is the length of the invariant CRC trailer.
const ICRCSize = 4

// UDPPort is the IANA port of RoCEv2.
const UDPPort = 4791

// IPv4 header fields a RoCEv2 sender writes and the ICRC covers.
const (
	// FlagDontFragment is the IPv4 flags/fragment-offset word with DF set and
	// offset 0, which rxe and RoCE NICs send.
	FlagDontFragment = 0x4000
	ipv4HeaderSize   = 20
	ipv6HeaderSize   = 40
	udpHeaderSize    = 8
	protoUDP         = 17
)

// Envelope holds the IP and UDP header fields of a RoCEv2 datagram that the
// ICRC covers (doc/protocol.md §4.1). Fields the ICRC masks (TOS, TTL, IP checksum,
// traffic class, flow label, hop limit, UDP checksum) are not here, and the
// lengths are derived from the transport packet.
//
// The IP version follows Src, as rxe derives it from the source GID: an IPv4
// or IPv4-mapped address means IPv4, anything else IPv6.
type Envelope struct {
	Src, Dst netip.Addr
	// IPID is the IPv4 Identification as transmitted. It is covered by the
	// ICRC; a Linux UDP socket that is unconnected and sets DF sends 0.
	IPID uint16
	// FlagsFragment is the IPv4 flags and fragment-offset word as
	// transmitted, normally FlagDontFragment.
	FlagsFragment    uint16
	SrcPort, DstPort uint16
}

// IPv4 reports whether the envelope describes an IPv4 datagram.
func (e *Envelope) IPv4() bool { return e.Src.Unmap().Is4() }

// pseudoMax is the longest masked prefix: pseudo-LRH, IPv6, UDP, BTH.
const pseudoMax = 8 + ipv6HeaderSize + udpHeaderSize + BTHSize

// ICRC returns the invariant CRC of a RoCEv2 transport packet whose bytes
// from the BTH through the pad are b (no trailer), carried in the datagram e
// describes (IBA Annex A17.3.3; doc/protocol.md §4). It is CRC-32 (IEEE) over eight
// 0xFF bytes standing in for the LRH, the IP and UDP headers and the BTH with
// their variant fields set to all ones, then the rest of b.
func ICRC(e *Envelope, b []byte) uint32 {
	var buf [pseudoMax]byte
	for i := range 8 {
		buf[i] = 0xff
	}
	n := 8
	udpLen := udpHeaderSize + len(b) + ICRCSize
	src, dst := e.Src.As16(), e.Dst.As16()
	if e.IPv4() {
		ip := buf[n : n+ipv4HeaderSize]
		ip[0] = 0x45
		ip[1] = 0xff // TOS
		binary.BigEndian.PutUint16(ip[2:], uint16(ipv4HeaderSize+udpLen))
		binary.BigEndian.PutUint16(ip[4:], e.IPID)
		binary.BigEndian.PutUint16(ip[6:], e.FlagsFragment)
		ip[8] = 0xff // TTL
		ip[9] = protoUDP
		ip[10], ip[11] = 0xff, 0xff // header checksum
		copy(ip[12:16], src[12:])
		copy(ip[16:20], dst[12:])
		n += ipv4HeaderSize
	} else {
		ip := buf[n : n+ipv6HeaderSize]
		ip[0], ip[1], ip[2], ip[3] = 0x6f, 0xff, 0xff, 0xff // version, class, flow label
		binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
		ip[6] = protoUDP
		ip[7] = 0xff // hop limit
		copy(ip[8:24], src[:])
		copy(ip[24:40], dst[:])
		n += ipv6HeaderSize
	}
	udp := buf[n : n+udpHeaderSize]
	binary.BigEndian.PutUint16(udp[0:], e.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], e.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	udp[6], udp[7] = 0xff, 0xff // checksum
	n += udpHeaderSize
	bth := copy(buf[n:], b[:min(len(b), BTHSize)])
	if bth > bthECN {
		buf[n+bthECN] = 0xff // FECN, BECN, resv6
	}
	n += bth
	// The prefix goes through the table byte by byte: handing the stack
	// buffer to crc32.Update would make it escape to the heap.
	crc := ^uint32(0)
	for _, c := range buf[:n] {
		crc = crc32.IEEETable[byte(crc)^c] ^ crc>>8
	}
	return crc32.Update(^crc, crc32.IEEETable, b[bth:])
}
