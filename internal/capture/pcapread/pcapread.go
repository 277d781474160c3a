// Package pcapread reads RoCEv2 frames from pcap files: those package
// capture writes and captures of real peers (tcpdump on the lab's tap
// device), used as test vectors and by goverbs decode.
//
// It decodes with gopacket, which handles whatever link, IP options and
// extension headers a foreign capture holds; it is kept apart from the
// writer so that programs that only capture do not depend on gopacket.
package pcapread

import (
	"bufio"
	"encoding/binary"
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

// Reader reads RoCEv2 frames from a pcap or pcapng stream with Ethernet
// link type.
type Reader struct {
	r gopacket.PacketDataSource
	// AnyPort makes Next return UDP datagrams to every port, not only to
	// 4791: devices sharing a host in tests listen on other ports.
	AnyPort bool
}

// NewReader reads the file header from r: pcap (what package capture and
// tcpdump write) or pcapng (what Wireshark saves by default), told apart
// by their first four bytes.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("pcapread: reading the file header: %w", err)
	}
	var src gopacket.PacketDataSource
	var link layers.LinkType
	switch m := binary.LittleEndian.Uint32(magic); m {
	case pcapngMagic:
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("pcapread: %w", err)
		}
		src, link = ng, ng.LinkType()
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1: // µs and ns, either byte order
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("pcapread: %w", err)
		}
		src, link = pr, pr.LinkType()
	default:
		return nil, fmt.Errorf("pcapread: not a pcap or pcapng file (it starts %x)", magic)
	}
	if link != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("pcapread: link type %v, want Ethernet", link)
	}
	return &Reader{r: src}, nil
}

// pcapngMagic is the block type of a pcapng file's first block, the
// section header, which reads the same in either byte order.
const pcapngMagic = 0x0a0d0d0a

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
