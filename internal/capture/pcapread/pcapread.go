// Package pcapread reads RoCEv2 frames from pcap files: those package
// capture writes and captures of real peers (tcpdump on the lab's tap
// device), used as test vectors and by goverbs decode.
//
// It decodes with gopacket, which handles whatever link, IP options and
// extension headers a foreign capture holds; it is kept apart from the
// writer so that programs that only capture do not depend on gopacket.
package pcapread

import (
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/wire"
)

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
		// pcapgo says "Unknown magic 746f6f72" of any other file.
		return nil, fmt.Errorf("pcapread: not a pcap file (pcapng is not read either: save as pcap): %w", err)
	}
	if pr.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("pcapread: link type %v, want Ethernet", pr.LinkType())
	}
	return &Reader{r: pr}, nil
}

// ErrNotRoCE is wrapped by [Reader.Next] errors for frames that are not
// complete IPv4/IPv6 UDP datagrams.
var ErrNotRoCE = errors.New("pcapread: not a RoCEv2 datagram")

// Next returns the next frame addressed to UDP port 4791 (any port with
// AnyPort), skipping all other traffic, or io.EOF at the end. The packet
// bytes are the reader's own copy.
func (r *Reader) Next() (capture.Frame, error) {
	for {
		data, ci, err := r.r.ReadPacketData()
		if err != nil {
			return capture.Frame{}, err
		}
		f, ok, err := decode(data, r.AnyPort)
		if err != nil {
			return capture.Frame{}, err
		}
		if ok {
			f.Time = ci.Timestamp
			return f, nil
		}
	}
}

// decode extracts a RoCEv2 frame; ok is false for other traffic.
func decode(data []byte, anyPort bool) (f capture.Frame, ok bool, err error) {
	pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if udp == nil || (!anyPort && udp.DstPort != wire.UDPPort) {
		return capture.Frame{}, false, nil
	}
	e := &f.Envelope
	e.SrcPort, e.DstPort = uint16(udp.SrcPort), uint16(udp.DstPort)
	switch ip := pkt.NetworkLayer().(type) {
	case *layers.IPv4:
		if ip.IHL != 5 {
			return capture.Frame{}, false, fmt.Errorf("%w: IPv4 options", ErrNotRoCE)
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
		return capture.Frame{}, false, fmt.Errorf("%w: no IP layer", ErrNotRoCE)
	}
	if int(udp.Length) != len(udp.Contents)+len(udp.Payload) {
		return capture.Frame{}, false, fmt.Errorf("%w: truncated UDP datagram", ErrNotRoCE)
	}
	f.Packet = wire.Packet(append([]byte(nil), udp.Payload...))
	return f, true, nil
}
