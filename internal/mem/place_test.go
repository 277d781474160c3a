package mem

import (
	"bytes"
	"fmt"
	"testing"
)

// TestPlace checks that Place copies exactly what copy does, for sources
// and destinations at every alignment and lengths around its pieces.
func TestPlace(t *testing.T) {
	src := make([]byte, 3*placePiece+200)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{0, 1, 63, placePiece - 1, placePiece, placePiece + 1, 2048, 4096, 3*placePiece + 100} {
		for _, so := range []int{0, 4, 12, 28, 64} {
			for _, do := range []int{0, 8, 12, 16} {
				for _, short := range []int{0, 1, -1} { // dst shorter, src shorter
					dn, sn := n, n
					if short > 0 {
						dn = max(n-37, 0)
					} else if short < 0 {
						sn = max(n-37, 0)
					}
					want := make([]byte, do+dn+16)
					got := bytes.Clone(want)
					wn := copy(want[do:do+dn], src[so:so+sn])
					gn := Place(got[do:do+dn], src[so:so+sn])
					if gn != wn || !bytes.Equal(got, want) {
						t.Fatalf("n %d, src at %d, dst at %d, short %d: Place = %d, copy = %d; bytes differ: %v",
							n, so, do, short, gn, wn, !bytes.Equal(got, want))
					}
				}
			}
		}
	}
}

// TestPlaceOverlap checks that Place moves overlapping slices as copy
// does, both ways.
func TestPlaceOverlap(t *testing.T) {
	for _, shift := range []int{-12, 12, -4000, 4000} {
		buf := make([]byte, 3*placePiece+8192)
		for i := range buf {
			buf[i] = byte(i*13 + i>>9)
		}
		want := bytes.Clone(buf)
		at, n := 4096, 2*placePiece+300
		copy(want[at+shift:at+shift+n], want[at:at+n])
		if got := Place(buf[at+shift:at+shift+n], buf[at:at+n]); got != n || !bytes.Equal(buf, want) {
			t.Errorf("shift %d: Place = %d, bytes equal to copy's: %v", shift, got, bytes.Equal(buf, want))
		}
	}
}

// BenchmarkPlace moves the payloads of 15 4 KiB-MTU packets as a
// coalesced receive holds them (12 bytes of BTH, 4112 bytes apart) into
// consecutive 4 KiB of a region, and, for comparison, with copy.
func BenchmarkPlace(b *testing.B) {
	src := make([]byte, 16*4112)
	dst := make([]byte, 15*4096)
	for _, f := range []struct {
		name string
		move func(dst, src []byte) int
	}{{"place", Place}, {"copy", func(d, s []byte) int { return copy(d, s) }}} {
		for _, off := range []int{0, 12} {
			stride := 4096 + 16*min(off, 1) // the packets' length, headers and trailer
			b.Run(fmt.Sprintf("%s/src+%d", f.name, off), func(b *testing.B) {
				b.SetBytes(int64(len(dst)))
				b.ReportAllocs()
				for b.Loop() {
					for k := range 15 {
						f.move(dst[k*4096:(k+1)*4096], src[off+k*stride:])
					}
				}
			})
		}
	}
}
