package wire

import (
	"math/rand/v2"
	"testing"
)

// TestCheckICRCAnyIPID seals packets of many lengths with random IPv4 IDs
// and checks that the solver recovers exactly that ID, and that a packet
// with a flipped bit is still rejected.
func TestCheckICRCAnyIPID(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	buf := make([]byte, 8192)
	rejected := 0
	for _, n := range []int{0, 1, 5, 64, 255, 1024, 4096} {
		for range 20 {
			e := testEnvelope
			e.IPID = uint16(r.Uint32())
			p, err := newSample(RCSendOnly, n).build(buf, &e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.CheckICRCAnyIPID(&testEnvelope)
			if err != nil || got != e.IPID {
				t.Fatalf("%d bytes: recovered ID %#x, %v; want %#x", n, got, err, e.IPID)
			}
			q := append(Packet(nil), p...)
			i := r.IntN(len(q) - ICRCSize - 1)
			if i >= bthECN {
				i++ // byte 4 is masked from the ICRC: FECN/BECN may change in flight
			}
			q[i] ^= 1 << r.IntN(8)
			if _, err := q.CheckICRCAnyIPID(&testEnvelope); err != nil {
				rejected++
			}
		}
	}
	// A random corruption passes only if it happens to look like another
	// ID: 2^-16 per try, so all 140 must be caught.
	if rejected != 140 {
		t.Errorf("%d of 140 corrupted packets rejected", rejected)
	}
	if _, err := Packet(make([]byte, 8)).CheckICRCAnyIPID(&testEnvelope); err == nil {
		t.Error("short packet accepted")
	}
}

func BenchmarkCheckICRCAnyIPID(b *testing.B) {
	e := testEnvelope
	e.IPID = 0x7cab
	p, _ := newSample(RCSendFirst, 1024).build(make([]byte, 2048), &e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.CheckICRCAnyIPID(&testEnvelope); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckICRCGuessIPID checks a ping-pong's 8-byte WRITE whose ID the
// second guess names, and one whose ID neither does (solved), with a
// prepared envelope, as a QP's.
func BenchmarkCheckICRCGuessIPID(b *testing.B) {
	e := testEnvelope
	e.IPID = 0x7cab
	p, _ := newSample(RCWriteOnly, 8).build(make([]byte, 256), &e)
	e.Prepare()
	for _, c := range []struct {
		name string
		alt  uint16
	}{{"guessed", e.IPID}, {"solved", 1}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if id, err := p.CheckICRCGuessIPID(&e, e.IPID+1, c.alt); err != nil || id != e.IPID {
					b.Fatal(id, err)
				}
			}
		})
	}
}
