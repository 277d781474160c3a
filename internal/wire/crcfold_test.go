package wire

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// The folding constants are those of the published single-lane folds:
// Linux's and Go's PCLMULQDQ CRC-32 fold by 512 bits with (0x154442bd4,
// 0x1c6e41596) and by 128 bits with (0x1751997d0, 0x0ccaa009e), which
// foldK must reproduce for its 2048-bit constants to be trusted.
func TestFoldConstants(t *testing.T) {
	for _, c := range []struct {
		d      int
		lo, hi uint64
	}{{512, 0x154442bd4, 0x1c6e41596}, {128, 0x1751997d0, 0x0ccaa009e}} {
		if lo, hi := foldK(c.d+32), foldK(c.d-32); lo != c.lo || hi != c.hi {
			t.Errorf("fold by %d bits: constants %#x, %#x; want %#x, %#x", c.d, lo, hi, c.lo, c.hi)
		}
	}
}

// The reduction's constants are the published ones: Linux's PCLMULQDQ
// CRC-32 reduces with x⁶⁴ mod P as 0x163cd6124, the polynomial as
// 0x1db710641 and the Barrett quotient as 0x1f7011641.
func TestBarrettConstants(t *testing.T) {
	want := [6]uint64{0x163cd6124, 0, 0x1db710641, 0x1f7011641, 0xffffffff, 0}
	if barrettConsts != want {
		t.Errorf("constants %#x, want %#x", barrettConsts, want)
	}
}

// updateIEEE agrees with hash/crc32 at every length around the folding's
// boundaries, at every alignment of the input, from any starting CRC.
func TestUpdateIEEE(t *testing.T) {
	if !foldOK {
		t.Log("this CPU does not fold (no AVX-512 with VPCLMULQDQ): hash/crc32 takes every input")
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 20000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	lengths := []int{0, 1, 63, 64, 255, 256, 511, 512, 513, 575, 576, 767, 768, 1023, 1024, 1025,
		1088, 2048, 4096, 4099, 4160, 8192, 9000, 16384, 19999}
	for _, n := range lengths {
		for _, off := range []int{0, 1, 7, 16, 33} {
			if off+n > len(buf) {
				continue
			}
			b := buf[off : off+n]
			for _, crc := range []uint32{0, 0xffffffff, r.Uint32()} {
				if got, want := updateIEEE(crc, b), crc32.Update(crc, crc32.IEEETable, b); got != want {
					t.Fatalf("length %d at offset %d from %#x: %#x, want %#x", n, off, crc, got, want)
				}
			}
		}
	}
}

// FuzzUpdateIEEE compares updateIEEE with hash/crc32 on arbitrary inputs
// and starting values.
func FuzzUpdateIEEE(f *testing.F) {
	f.Add(uint32(0), make([]byte, 1024))
	f.Add(uint32(0xdeadbeef), make([]byte, 777))
	f.Fuzz(func(t *testing.T, crc uint32, b []byte) {
		if got, want := updateIEEE(crc, b), crc32.Update(crc, crc32.IEEETable, b); got != want {
			t.Fatalf("length %d from %#x: %#x, want %#x", len(b), crc, got, want)
		}
	})
}

// BenchmarkUpdateIEEE compares the folding with hash/crc32 on the sizes
// of RoCE payloads; where the CPU cannot fold both rows run hash/crc32.
func BenchmarkUpdateIEEE(b *testing.B) {
	for _, n := range []int{256, 512, 1024, 4096, 65536} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("fold/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += uint64(updateIEEE(0, p))
			}
		})
		b.Run(fmt.Sprintf("hash-crc32/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += uint64(crc32.Update(0, crc32.IEEETable, p))
			}
		})
	}
}

// TestSlicing8 holds the table-driven CRC, which every short piece of an
// ICRC goes through, to hash/crc32 at every length up to a few steps of
// eight, so that each of its tails (eight, four, then single bytes) is
// taken from many starting registers.
func TestSlicing8(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 40)
	for n := range len(b) + 1 {
		for range 50 {
			for i := range b[:n] {
				b[i] = byte(r.Uint32())
			}
			reg := r.Uint32()
			// hash/crc32 takes and returns the register inverted.
			if got, want := slicing8(reg, b[:n]), ^crc32.Update(^reg, crc32.IEEETable, b[:n]); got != want {
				t.Fatalf("%d bytes from register %#x: %#x, want %#x", n, reg, got, want)
			}
		}
	}
}
