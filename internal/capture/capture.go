// Package capture writes RoCEv2 packets as pcap files with Ethernet/IP/UDP
// framing, so Wireshark and tshark decode them as InfiniBand over UDP port
// 4791, and records a device's traffic through a conn.Observer. Its
// sub-package pcapread reads such files back, and captures from real peers
// (tcpdump on the lab's tap device) as test vectors.
//
// The writer uses only the standard library: the pcap and Ethernet/IP/UDP
// framing it writes is fixed and small, and a program that only captures
// (every program importing verbs) should not carry a packet-decoding
// library. The IP header carries exactly the envelope's identification and
// flags, because the ICRC covers them (IBA Annex A17.3.3).
package capture

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/goverbs/goverbs/internal/wire"
)

// Frame is one RoCEv2 datagram in a capture.
type Frame struct {
	Time     time.Time
	Envelope wire.Envelope
	// TTL is the IPv4 TTL or IPv6 hop limit; TOS the IPv4 TOS byte or IPv6
	// traffic class. The ICRC masks both.
	TTL, TOS uint8
	// Packet is the UDP payload: BTH through ICRC.
	Packet wire.Packet
}

// Synthetic link addresses for written frames; the RoCEv2 stack does not
// see Ethernet, and locally administered addresses cannot clash with real
// hardware.
var (
	srcMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	dstMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

// DefaultTTL is written when a frame's TTL is zero.
const DefaultTTL = 64

// SnapLen is the snapshot length in the file header: every frame is
// written whole.
const SnapLen = 65535

// The pcap file format (pcap-savefile(5)): a file header, then per frame a
// record header and the frame. Written little-endian with the microsecond
// magic, as libpcap does on little-endian hosts.
const (
	pcapMagic        = 0xa1b2c3d4
	pcapFileHdrSize  = 24
	pcapRecHdrSize   = 16
	linkTypeEthernet = 1

	ethHdrSize   = 14
	ipv6HdrSize  = 40
	udpHdrSize   = 8
	etherTypeIP4 = 0x0800
	etherTypeIP6 = 0x86dd

	maxFrame = ethHdrSize + ipv6HdrSize + udpHdrSize
)

// Writer writes RoCEv2 frames to a pcap stream.
type Writer struct {
	w   io.Writer
	hdr [pcapRecHdrSize + maxFrame]byte // record header and framing, reused
}

// NewWriter writes the pcap file header to w and returns a Writer.
func NewWriter(w io.Writer) (*Writer, error) {
	var h [pcapFileHdrSize]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], pcapMagic)
	le.PutUint16(h[4:], 2) // version 2.4
	le.PutUint16(h[6:], 4)
	// thiszone and sigfigs stay 0.
	le.PutUint32(h[16:], SnapLen)
	le.PutUint32(h[20:], linkTypeEthernet)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	return &Writer{w: w}, nil
}

// WriteFrame frames f.Packet in Ethernet, IPv4 or IPv6 (by the envelope's
// source address) and UDP, and appends it to the capture. The IPv4 header
// has a valid checksum; the UDP checksum is 0, as RoCEv2 senders send it.
func (w *Writer) WriteFrame(f *Frame) error {
	e := &f.Envelope
	ttl := f.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	be := binary.BigEndian
	frame := w.hdr[pcapRecHdrSize:]
	copy(frame[0:], dstMAC[:])
	copy(frame[6:], srcMAC[:])
	udpLen := udpHdrSize + len(f.Packet)
	if e.IPv4() {
		be.PutUint16(frame[12:], etherTypeIP4)
	} else {
		be.PutUint16(frame[12:], etherTypeIP6)
	}
	ip := frame[ethHdrSize:]
	ipLen := wire.PutIPHeader(ip, e, udpLen, f.TOS, ttl)
	udp := ip[ipLen:]
	be.PutUint16(udp[0:], e.SrcPort)
	be.PutUint16(udp[2:], e.DstPort)
	be.PutUint16(udp[4:], uint16(udpLen))
	be.PutUint16(udp[6:], 0)
	hdrLen := ethHdrSize + ipLen + udpHdrSize
	n := hdrLen + len(f.Packet)
	if n > SnapLen {
		return fmt.Errorf("capture: %d-byte frame exceeds the snapshot length", n)
	}
	le := binary.LittleEndian
	rec := w.hdr[:pcapRecHdrSize]
	le.PutUint32(rec[0:], uint32(f.Time.Unix()))
	le.PutUint32(rec[4:], uint32(f.Time.Nanosecond()/1000))
	le.PutUint32(rec[8:], uint32(n))
	le.PutUint32(rec[12:], uint32(n))
	if _, err := w.w.Write(w.hdr[:pcapRecHdrSize+hdrLen]); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if _, err := w.w.Write(f.Packet); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}
