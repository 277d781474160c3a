package capture_test

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/capture"
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
	r, err := capture.NewReader(&buf)
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
	if _, err := capture.NewReader(bytes.NewReader([]byte("not a pcap file at all"))); err == nil {
		t.Error("NewReader accepted garbage")
	}
}
