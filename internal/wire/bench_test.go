package wire

import (
	"fmt"
	"net/netip"
	"testing"
)

func benchPacket(b testing.TB, op Opcode, n int) Packet {
	p, err := newSample(op, n).build(make([]byte, 8192), &testEnvelope)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// parse is what the receive path does per packet before acting on it.
func parse(p Packet) (sum uint64) {
	if p.Validate() != nil {
		return 0
	}
	b := p.BTH()
	sum = uint64(b.DestQP()) + uint64(b.PSN())
	if r := p.RETH(); r != nil {
		sum += r.VA() + uint64(r.DMALength())
	}
	if a := p.AETH(); a != nil {
		sum += uint64(a.Syndrome())
	}
	return sum + uint64(len(p.Payload()))
}

var sink uint64

func BenchmarkParse(b *testing.B) {
	for _, op := range []Opcode{RCWriteFirst, RCAcknowledge, RCCompareSwap} {
		p := benchPacket(b, op, 1024)
		b.Run(op.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink += parse(p)
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	buf := make([]byte, 8192)
	payload := make([]byte, 1024)
	f := BTHFields{Opcode: RCWriteFirst, PKey: 0xffff, DestQP: 0x11, PSN: 1}
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		p, err := NewPacket(buf, 64, &f, len(payload))
		if err != nil {
			b.Fatal(err)
		}
		p.RETH().Encode(&RETHFields{VA: 0x1000, RKey: 7, DMALength: 4096})
		copy(p.Payload(), payload)
		p.SealICRC(&testEnvelope)
	}
}

// BenchmarkICRC computes the ICRC of SEND packets from an empty one (the
// pseudo-header and BTH alone) to a 4 KiB payload, over IPv4 and IPv6,
// with the envelope prepared (Envelope.Prepare, what the engine does) or
// not.
func BenchmarkICRC(b *testing.B) {
	v6 := Envelope{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"),
		SrcPort: 0xc001, DstPort: UDPPort}
	v4p, v6p := testEnvelope, v6
	v4p.Prepare()
	v6p.Prepare()
	for _, env := range []struct {
		name string
		e    *Envelope
	}{{"ipv4", &testEnvelope}, {"ipv6", &v6}, {"ipv4-prepared", &v4p}, {"ipv6-prepared", &v6p}} {
		for _, n := range []int{0, 8, 256, 1024, 4096} {
			p := benchPacket(b, RCSendOnly, n)
			b.Run(fmt.Sprintf("%s/%d", env.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(p)))
				for b.Loop() {
					sink += uint64(p.ComputeICRC(env.e))
				}
			})
		}
	}
}

// TestZeroAllocations holds the codec's budget: parsing, building and the
// ICRC, whole or piece by piece, allocate nothing.
func TestZeroAllocations(t *testing.T) {
	p := benchPacket(t, RCWriteFirst, 1024)
	bad := append(Packet(nil), p[:20]...)
	buf := make([]byte, 4096)
	payload := make([]byte, 1024)
	f := BTHFields{Opcode: RCWriteFirst, DestQP: 0x11}
	prepared := testEnvelope
	prepared.Prepare()
	for name, fn := range map[string]func(){
		"parse":                func() { sink += parse(p) },
		"reject":               func() { sink += parse(bad) },
		"check ICRC":           func() { _ = p.CheckICRC(&testEnvelope) },
		"check ICRC, prepared": func() { _ = p.CheckICRC(&prepared) },
		"build": func() {
			q, _ := NewPacket(buf, 64, &f, len(payload))
			q.RETH().Encode(&RETHFields{VA: 1, RKey: 2, DMALength: 3})
			copy(q.Payload(), payload)
			q.SealICRC(&testEnvelope)
		},
		"seal while copying": func() {
			q, _ := NewPacket(buf, 64, &f, len(payload))
			crc := q.StartICRC(&testEnvelope)
			crc.Copy(q.Payload(), payload)
			q.SealICRCState(crc)
		},
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations per run", name, n)
		}
	}
}

// BenchmarkGather seals a 4 KiB RDMA WRITE packet whose payload comes from
// a larger region, the sender's two choices: copy the payload into the
// packet and run the ICRC over the copy (SealICRC), or run it over the
// source while copying (ICRCState.Copy, what the engine does). The source
// is 64 KiB (in cache) or 64 MiB (not).
func BenchmarkGather(b *testing.B) {
	f := BTHFields{Opcode: RCWriteMiddle, PKey: 0xffff, DestQP: 0x11, PSN: 1}
	const n = 4096
	buf := make([]byte, PacketLen(f.Opcode, n))
	for _, size := range []int{64 << 10, 64 << 20} {
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i * 7)
		}
		for _, mode := range []string{"copy-then-crc", "crc-while-copying"} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, size>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(n)
				off := 0
				for b.Loop() {
					s := src[off : off+n]
					off = (off + n) % size
					p, _ := NewPacket(buf, 0, &f, n)
					if mode == "copy-then-crc" {
						copy(p.Payload(), s)
						p.SealICRC(&testEnvelope)
						continue
					}
					crc := p.StartICRC(&testEnvelope)
					crc.Copy(p.Payload(), s)
					p.SealICRCState(crc)
				}
			})
		}
	}
}
