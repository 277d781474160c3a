package wire

import (
	"math/rand/v2"
	"testing"
)

// refICRCv4 is the ICRC of p's transport bytes in the IPv4 datagram e
// describes, from the masked pseudo-header written out by hand (doc/protocol.md
// §4.1) and the bitwise CRC, independent of ICRC.
func refICRCv4(e *Envelope, p Packet) uint32 {
	udpLen := 8 + len(p)
	ipLen := 20 + udpLen
	src, dst := e.Src.As4(), e.Dst.As4()
	b := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x45, 0xff, byte(ipLen >> 8), byte(ipLen), byte(e.IPID >> 8), byte(e.IPID),
		byte(e.FlagsFragment >> 8), byte(e.FlagsFragment), 0xff, 17, 0xff, 0xff}
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	b = append(b, byte(e.SrcPort>>8), byte(e.SrcPort), byte(e.DstPort>>8), byte(e.DstPort),
		byte(udpLen>>8), byte(udpLen), 0xff, 0xff)
	bth := append([]byte(nil), p[:BTHSize]...)
	bth[bthECN] = 0xff
	b = append(b, bth...)
	b = append(b, p[BTHSize:len(p)-ICRCSize]...)
	return crcIEEE(b)
}

// TestResealIPID seals packets for ID 0, moves them to random IDs (and on
// to another) and compares the trailer with the reference ICRC for that
// ID.
func TestResealIPID(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	buf := make([]byte, 9000)
	for _, n := range []int{0, 1, 8, 256, 1024, 4096, 8000} {
		p, err := newSample(RCWriteMiddle, n).build(buf, &testEnvelope)
		if err != nil {
			t.Fatal(err)
		}
		from := uint16(0)
		for _, to := range []uint16{1, 2, 63, uint16(r.Uint32()), 0} {
			p.ResealIPID(from, to)
			e := testEnvelope
			e.IPID = to
			if got, want := p.ICRC(), refICRCv4(&e, p); got != want {
				t.Fatalf("%d bytes, ID %d → %d: ICRC %#08x, want %#08x", n, from, to, got, want)
			}
			from = to
		}
	}
}

// TestCheckICRCGuessIPID checks that a right guess (first or second), wrong
// guesses and no guess all recover the ID, and that corruption is still
// caught.
func TestCheckICRCGuessIPID(t *testing.T) {
	buf := make([]byte, 4200)
	for _, id := range []uint16{0, 1, 5, 0xbeef} {
		e := testEnvelope
		e.IPID = id
		p, err := newSample(RCWriteMiddle, 4096).build(buf, &e)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range [][2]uint16{{id, 0}, {0, 0}, {7, 0}, {7, id}, {id, 7}, {7, 8}} {
			if got, err := p.CheckICRCGuessIPID(&testEnvelope, g[0], g[1]); err != nil || got != id {
				t.Errorf("ID %d, guesses %d and %d: got %d, %v", id, g[0], g[1], got, err)
			}
		}
		p[100] ^= 0x10
		if _, err := p.CheckICRCGuessIPID(&testEnvelope, id, id); err == nil {
			t.Errorf("ID %d: corrupted packet accepted", id)
		}
	}
}

func TestIPIDAllocs(t *testing.T) {
	p := benchPacket(t, RCWriteMiddle, 4096)
	p.ResealIPID(0, 1) // fill the cache
	allocs := testing.AllocsPerRun(100, func() {
		p.ResealIPID(1, 17)
		p.ResealIPID(17, 1)
		if _, err := p.CheckICRCGuessIPID(&testEnvelope, 1, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkResealIPID(b *testing.B) {
	p := benchPacket(b, RCWriteMiddle, 4096)
	b.ReportAllocs()
	id := uint16(0)
	for b.Loop() {
		p.ResealIPID(id, id+1)
		id++
	}
}
