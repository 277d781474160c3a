package capture_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/capture/pcapread"
	"github.com/goverbs/goverbs/internal/wire"
)

// samplePacket builds a sealed packet of opcode op for envelope e with
// fields derived from seq, so every frame of a test differs.
func samplePacket(t testing.TB, op wire.Opcode, seq int, e *wire.Envelope) wire.Packet {
	t.Helper()
	n := 0
	if op.Info().Is(wire.OpPayload) {
		n = 5 + seq%7
	}
	f := wire.BTHFields{Opcode: op, PKey: 0xffff, DestQP: uint32(0x100 + seq), PSN: wire.PSN(0xfff000 + seq*0x100),
		AckRequest: op.Info().Is(wire.OpRequest)}
	p, err := wire.NewPacket(make([]byte, 256), 0, &f, n)
	if err != nil {
		t.Fatal(err)
	}
	if h := p.RETH(); h != nil {
		h.Encode(&wire.RETHFields{VA: 0x7f0000001000 + uint64(seq), RKey: 0x1200 + uint32(seq), DMALength: uint32(4096 + seq)})
	}
	if h := p.AETH(); h != nil {
		h.Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: uint32(seq)})
	}
	if h := p.AtomicETH(); h != nil {
		h.Encode(&wire.AtomicETHFields{VA: 0x7f0000002000, RKey: 0x3400 + uint32(seq), SwapAdd: uint64(seq), Compare: 99})
	}
	if h := p.AtomicAckETH(); h != nil {
		h.Encode(&wire.AtomicAckETHFields{OrigData: 0x1000 + uint64(seq)})
	}
	if h := p.ImmDt(); h != nil {
		h.Encode(&wire.ImmDtFields{Imm: 0xa0000000 + uint32(seq)})
	}
	if h := p.IETH(); h != nil {
		h.Encode(&wire.IETHFields{RKey: 0x5600 + uint32(seq)})
	}
	if h := p.DETH(); h != nil {
		h.Encode(&wire.DETHFields{QKey: 0x11111111, SrcQP: uint32(0x20 + seq)})
	}
	for i := range p.Payload() {
		p.Payload()[i] = byte('a' + i)
	}
	p.SealICRC(e)
	return p
}

var envelopes = []wire.Envelope{
	{Src: netip.MustParseAddr("10.77.0.1"), Dst: netip.MustParseAddr("10.77.0.2"), IPID: 0x1234,
		FlagsFragment: wire.FlagDontFragment, SrcPort: 0xc123, DstPort: wire.UDPPort},
	{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), SrcPort: 0xc124, DstPort: wire.UDPPort},
}

func TestWriteReadRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var want []capture.Frame
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i, op := range []wire.Opcode{wire.RCSendFirst, wire.RCAcknowledge, wire.RCReadRequest, wire.UDSendOnlyWithImmediate} {
		e := envelopes[i%len(envelopes)]
		f := capture.Frame{Time: start.Add(time.Duration(i) * time.Millisecond), Envelope: e, TTL: uint8(1 + i), TOS: uint8(i * 4),
			Packet: samplePacket(t, op, i, &e)}
		if err := w.WriteFrame(&f); err != nil {
			t.Fatal(err)
		}
		want = append(want, f)
	}
	r, err := pcapread.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, wf := range want {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Envelope != wf.Envelope || f.TTL != wf.TTL || f.TOS != wf.TOS || !f.Time.Equal(wf.Time) {
			t.Errorf("frame %d: got %+v ttl %d tos %d, want %+v ttl %d tos %d", i, f.Envelope, f.TTL, f.TOS, wf.Envelope, wf.TTL, wf.TOS)
		}
		if !bytes.Equal(f.Packet, wf.Packet) {
			t.Errorf("frame %d: packet bytes differ", i)
		}
		if err := f.Packet.CheckICRC(&f.Envelope); err != nil {
			t.Errorf("frame %d: %v", i, err)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

func TestReaderRejectsGarbage(t *testing.T) {
	if _, err := pcapread.NewReader(bytes.NewReader([]byte("not a pcap file at all"))); err == nil {
		t.Error("NewReader accepted garbage")
	}
}

// TestWriterMatchesGopacket: the standard-library writer writes, byte for
// byte, the file gopacket's layers and pcapgo write for the same frames
// (IPv4 with a computed header checksum, IPv6, UDP checksum 0).
func TestWriterMatchesGopacket(t *testing.T) {
	var got, want bytes.Buffer
	w, err := capture.NewWriter(&got)
	if err != nil {
		t.Fatal(err)
	}
	pw := pcapgo.NewWriter(&want)
	if err := pw.WriteFileHeader(capture.SnapLen, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 22, 12, 0, 0, 123456789, time.UTC)
	for i, op := range []wire.Opcode{wire.RCSendFirst, wire.RCAcknowledge, wire.RCReadRequest, wire.UDSendOnlyWithImmediate, wire.RCWriteOnly} {
		e := envelopes[i%len(envelopes)]
		f := capture.Frame{Time: start.Add(time.Duration(i) * time.Millisecond), Envelope: e, TTL: uint8(i), TOS: uint8(i * 4),
			Packet: samplePacket(t, op, i, &e)}
		if err := w.WriteFrame(&f); err != nil {
			t.Fatal(err)
		}
		data := gopacketFrame(t, &f)
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(data), Length: len(data)}
		if err := pw.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("pcap differs from gopacket's:\n got %x\nwant %x", got.Bytes(), want.Bytes())
	}
}

// gopacketFrame frames f with gopacket's layers.
func gopacketFrame(t *testing.T, f *capture.Frame) []byte {
	t.Helper()
	e := &f.Envelope
	ttl := f.TTL
	if ttl == 0 {
		ttl = capture.DefaultTTL
	}
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: layers.UDPPort(e.SrcPort), DstPort: layers.UDPPort(e.DstPort)}
	var ip gopacket.SerializableLayer
	if e.IPv4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		src, dst := e.Src.Unmap().As4(), e.Dst.Unmap().As4()
		ip = &layers.IPv4{Version: 4, IHL: 5, TOS: f.TOS, Id: e.IPID, TTL: ttl, Protocol: layers.IPProtocolUDP,
			Flags: layers.IPv4Flag(e.FlagsFragment >> 13), FragOffset: e.FlagsFragment & 0x1fff, SrcIP: src[:], DstIP: dst[:]}
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		src, dst := e.Src.As16(), e.Dst.As16()
		ip = &layers.IPv6{Version: 6, TrafficClass: f.TOS, HopLimit: ttl, NextHeader: layers.IPProtocolUDP, SrcIP: src[:], DstIP: dst[:]}
	}
	buf := gopacket.NewSerializeBuffer()
	lengths := gopacket.SerializeOptions{FixLengths: true}
	sums := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	for _, step := range []struct {
		l    gopacket.SerializableLayer
		opts gopacket.SerializeOptions
	}{{gopacket.Payload(f.Packet), lengths}, {udp, lengths}, {ip, sums}, {eth, lengths}} {
		if err := step.l.SerializeTo(buf, step.opts); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestRecorder: sent datagrams are written with the IPv4 ID they carry
// (0 without one); a received datagram from a UDP socket, whose ID the
// socket hides, is written with the ID its ICRC implies; every frame
// read back has a valid ICRC.
func TestRecorder(t *testing.T) {
	local, peer := netip.MustParseAddrPort("10.0.0.1:4791"), netip.MustParseAddrPort("10.0.0.2:4791")
	env := func(src, dst netip.AddrPort, id uint16) wire.Envelope {
		return wire.Envelope{Src: src.Addr(), Dst: dst.Addr(), IPID: id, FlagsFragment: wire.FlagDontFragment,
			SrcPort: src.Port(), DstPort: dst.Port()}
	}
	out0, out1, in := env(local, peer, 0), env(local, peer, 0x2a2a), env(peer, local, 0x0105)
	q := samplePacket(t, wire.RCSendOnly, 4, &out0) // sent in parts, its payload gathered
	sent := []conn.Message{
		{Buf: samplePacket(t, wire.RCSendOnly, 1, &out0), Addr: peer},
		{Buf: samplePacket(t, wire.RCSendOnly, 2, &out1), Addr: peer, IPID: 0x2a2a, HasIPID: true},
		{Buf: q[:wire.BTHSize], Body: q[wire.BTHSize : len(q)-wire.ICRCSize], Tail: q[len(q)-wire.ICRCSize:], Addr: peer},
	}
	p := samplePacket(t, wire.RCAcknowledge, 3, &in)
	recvd := []conn.Message{{Buf: append(p, make([]byte, 100)...), N: len(p), Addr: peer}}

	var buf bytes.Buffer
	r, err := capture.NewRecorder(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r.Sent(local, sent)
	r.Received(local, recvd)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	pr, err := pcapread.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []wire.Envelope{out0, out1, out0, in} {
		f, err := pr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Envelope != want {
			t.Errorf("frame %d: envelope %+v, want %+v", i, f.Envelope, want)
		}
		if err := f.Packet.CheckICRC(&f.Envelope); err != nil {
			t.Errorf("frame %d: %v", i, err)
		}
	}
	if _, err := pr.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

// TestRecorderStopsAtError: after a failed write the recorder reports the
// error and writes nothing more.
func TestRecorderStopsAtError(t *testing.T) {
	w := &failAfter{n: 1}
	r, err := capture.NewRecorder(w)
	if err != nil {
		t.Fatal(err)
	}
	e := envelopes[0]
	m := []conn.Message{{Buf: samplePacket(t, wire.RCSendOnly, 0, &e), Addr: netip.AddrPortFrom(e.Dst, e.DstPort)}}
	r.Sent(netip.AddrPortFrom(e.Src, e.SrcPort), m)
	if !errors.Is(r.Err(), errFull) {
		t.Fatalf("Err after a failed write: %v", r.Err())
	}
	r.Sent(netip.AddrPortFrom(e.Src, e.SrcPort), m)
	if w.calls != 2 {
		t.Errorf("%d writes, want 2 (the header, the failed frame)", w.calls)
	}
}

var errFull = errors.New("disk full")

// failAfter accepts n writes, then fails.
type failAfter struct{ n, calls int }

func (w *failAfter) Write(b []byte) (int, error) {
	w.calls++
	if w.calls > w.n {
		return 0, errFull
	}
	return len(b), nil
}
