// Package capture writes and reads RoCEv2 packets as pcap files with
// Ethernet/IP/UDP framing, so Wireshark and tshark decode them as InfiniBand
// over UDP port 4791, and so captures from real peers (tcpdump on the lab's
// tap device) can be replayed as test vectors.
//
// Framing uses gopacket's layers and pcapgo: the IP header carries exactly
// the envelope's identification and flags, because the ICRC covers them.
package capture

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

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
	srcMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	dstMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

// DefaultTTL is written when a frame's TTL is zero.
const DefaultTTL = 64

const snapLen = 65535

// Writer writes RoCEv2 frames to a pcap stream.
type Writer struct {
	w   *pcapgo.Writer
	buf gopacket.SerializeBuffer
}

// NewWriter writes the pcap file header to w and returns a Writer.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(snapLen, layers.LinkTypeEthernet); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	return &Writer{w: pw, buf: gopacket.NewSerializeBuffer()}, nil
}

// WriteFrame frames f.Packet in Ethernet, IPv4 or IPv6 (by the envelope's
// source address) and UDP, and appends it to the capture. The IP header has
// a valid checksum; the UDP checksum is 0, as RoCEv2 senders send it.
func (w *Writer) WriteFrame(f *Frame) error {
	if err := w.buf.Clear(); err != nil {
		return err
	}
	e := &f.Envelope
	ttl := f.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC}
	udp := &layers.UDP{SrcPort: layers.UDPPort(e.SrcPort), DstPort: layers.UDPPort(e.DstPort)}
	var ip gopacket.SerializableLayer
	if e.IPv4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		src, dst := e.Src.Unmap().As4(), e.Dst.Unmap().As4()
		ip = &layers.IPv4{
			Version: 4, IHL: 5, TOS: f.TOS, Id: e.IPID, TTL: ttl, Protocol: layers.IPProtocolUDP,
			Flags:      layers.IPv4Flag(e.FlagsFragment >> 13),
			FragOffset: e.FlagsFragment & 0x1fff,
			SrcIP:      src[:], DstIP: dst[:],
		}
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		src, dst := e.Src.As16(), e.Dst.As16()
		ip = &layers.IPv6{
			Version: 6, TrafficClass: f.TOS, HopLimit: ttl, NextHeader: layers.IPProtocolUDP,
			SrcIP: src[:], DstIP: dst[:],
		}
	}
	// Serialize from the inside out so only the IP header gets a computed
	// checksum; the UDP checksum stays 0.
	lengths := gopacket.SerializeOptions{FixLengths: true}
	sums := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.Payload(f.Packet).SerializeTo(w.buf, lengths); err != nil {
		return err
	}
	if err := udp.SerializeTo(w.buf, lengths); err != nil {
		return err
	}
	if err := ip.SerializeTo(w.buf, sums); err != nil {
		return err
	}
	if err := eth.SerializeTo(w.buf, lengths); err != nil {
		return err
	}
	data := w.buf.Bytes()
	ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(data), Length: len(data)}
	if err := w.w.WritePacket(ci, data); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

// Reader reads RoCEv2 frames from a pcap stream with Ethernet link type.
type Reader struct {
	r *pcapgo.Reader
	// AnyPort makes Next return UDP datagrams to every port, not only to
	// 4791: devices sharing a host in tests listen on other ports.
	AnyPort bool
}

// NewReader reads the pcap file header from r.
func NewReader(r io.Reader) (*Reader, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if pr.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("capture: link type %v, want Ethernet", pr.LinkType())
	}
	return &Reader{r: pr}, nil
}

// ErrNotRoCE is wrapped by [Reader.Next] errors for frames that are not
// complete IPv4/IPv6 UDP datagrams.
var ErrNotRoCE = errors.New("capture: not a RoCEv2 datagram")

// Next returns the next frame addressed to UDP port 4791 (any port with
// AnyPort), skipping all other traffic, or io.EOF at the end. The packet bytes are the reader's
// own copy.
func (r *Reader) Next() (Frame, error) {
	for {
		data, ci, err := r.r.ReadPacketData()
		if err != nil {
			return Frame{}, err
		}
		f, ok, err := decode(data, r.AnyPort)
		if err != nil {
			return Frame{}, err
		}
		if ok {
			f.Time = ci.Timestamp
			return f, nil
		}
	}
}

// decode extracts a RoCEv2 frame; ok is false for other traffic.
func decode(data []byte, anyPort bool) (f Frame, ok bool, err error) {
	pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if udp == nil || (!anyPort && udp.DstPort != wire.UDPPort) {
		return Frame{}, false, nil
	}
	e := &f.Envelope
	e.SrcPort, e.DstPort = uint16(udp.SrcPort), uint16(udp.DstPort)
	switch ip := pkt.NetworkLayer().(type) {
	case *layers.IPv4:
		if ip.IHL != 5 {
			return Frame{}, false, fmt.Errorf("%w: IPv4 options", ErrNotRoCE)
		}
		e.Src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		e.Dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
		e.IPID = ip.Id
		e.FlagsFragment = uint16(ip.Flags)<<13 | ip.FragOffset
		f.TTL, f.TOS = ip.TTL, ip.TOS
	case *layers.IPv6:
		e.Src, _ = netip.AddrFromSlice(ip.SrcIP)
		e.Dst, _ = netip.AddrFromSlice(ip.DstIP)
		f.TTL, f.TOS = ip.HopLimit, ip.TrafficClass
	default:
		return Frame{}, false, fmt.Errorf("%w: no IP layer", ErrNotRoCE)
	}
	if int(udp.Length) != len(udp.Contents)+len(udp.Payload) {
		return Frame{}, false, fmt.Errorf("%w: truncated UDP datagram", ErrNotRoCE)
	}
	f.Packet = wire.Packet(append([]byte(nil), udp.Payload...))
	return f, true, nil
}
