package wire

import "encoding/binary"

// GRHSize is the length of the network-header area at the start of every
// receive buffer of a UD QP (struct ibv_grh; doc/protocol.md §13.3): the
// receive completion's byte count includes it, and the payload follows it.
const GRHSize = 40

// PutIPHeader writes the IP header of the datagram e describes, carrying
// udpLen bytes of UDP header and payload, into b and returns its length:
// 20 for IPv4 (with a valid header checksum), 40 for IPv6 (flow label 0).
// tos is the IPv4 TOS byte or IPv6 traffic class, ttl the TTL or hop
// limit; both are variant fields the ICRC masks (doc/protocol.md §1.2).
//
//	IPv4 (RFC 791)
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version|  IHL  |      TOS      |          Total Length         |
//	|         Identification        |Flags|     Fragment Offset     |
//	|      TTL      |   Protocol    |        Header Checksum        |
//	|                        Source Address                         |
//	|                     Destination Address                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//	IPv6 (RFC 8200)
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version| Traffic Class |              Flow Label               |
//	|        Payload Length         |  Next Header  |   Hop Limit   |
//	|              Source Address (16) ... Destination Address (16) |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
func PutIPHeader(b []byte, e *Envelope, udpLen int, tos, ttl uint8) int {
	be := binary.BigEndian
	if e.IPv4() {
		b = b[:ipv4HeaderSize]
		b[0] = 4<<4 | ipv4HeaderSize/4
		b[1] = tos
		be.PutUint16(b[2:], uint16(ipv4HeaderSize+udpLen))
		be.PutUint16(b[4:], e.IPID)
		be.PutUint16(b[6:], e.FlagsFragment)
		b[8], b[9] = ttl, protoUDP
		be.PutUint16(b[10:], 0)
		src, dst := e.Src.Unmap().As4(), e.Dst.Unmap().As4()
		copy(b[12:], src[:])
		copy(b[16:], dst[:])
		be.PutUint16(b[10:], ipv4Checksum(b))
		return ipv4HeaderSize
	}
	b = b[:ipv6HeaderSize]
	be.PutUint32(b[0:], 6<<28|uint32(tos)<<20)
	be.PutUint16(b[4:], uint16(udpLen))
	b[6], b[7] = protoUDP, ttl
	src, dst := e.Src.As16(), e.Dst.As16()
	copy(b[8:], src[:])
	copy(b[24:], dst[:])
	return ipv6HeaderSize
}

// PutGRH fills b[:GRHSize] as a UD receive buffer starts on RoCEv2 (IBA
// Annex A17; doc/protocol.md §13.3, as libibverbs' ibv_init_ah_from_wc
// reads it): the
// IPv6 header of the datagram e describes, or for IPv4 twenty zero bytes
// and then the IPv4 header. n is the length of the transport packet, BTH
// through ICRC, which sets the header's length field.
func PutGRH(b []byte, e *Envelope, n int, tos, ttl uint8) {
	b = b[:GRHSize]
	if e.IPv4() {
		clear(b[:GRHSize-ipv4HeaderSize])
		b = b[GRHSize-ipv4HeaderSize:]
	}
	PutIPHeader(b, e, udpHeaderSize+n, tos, ttl)
}

// ipv4Checksum is the Internet checksum (RFC 1071) of an IPv4 header whose
// checksum field is zero.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
