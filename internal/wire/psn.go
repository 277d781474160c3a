package wire

// PSN is a 24-bit packet sequence number (IBA 9.7.1). PSNs wrap modulo 2^24
// and are ordered as serial numbers: a PSN is "after" another when the
// forward distance between them is less than 2^23. Never compare PSNs with
// the integer operators; use the methods.
type PSN uint32

const (
	// PSNMask keeps the low 24 bits.
	PSNMask = mask24
	// psnHalf is half the sequence space, the ordering horizon.
	psnHalf = 1 << 23
)

// Add returns p advanced by n (mod 2^24).
func (p PSN) Add(n uint32) PSN { return (p + PSN(n)) & PSNMask }

// Next returns p + 1 (mod 2^24).
func (p PSN) Next() PSN { return p.Add(1) }

// Sub returns p moved back by n (mod 2^24).
func (p PSN) Sub(n uint32) PSN { return (p - PSN(n)) & PSNMask }

// Diff returns the signed distance p − q in the range [−2^23, 2^23): positive
// when p is after q. This is rxe's psn_compare: shift the 24-bit difference
// into the top of an int32.
func (p PSN) Diff(q PSN) int32 { return int32(uint32(p-q)<<8) >> 8 }

// Less reports whether p comes before q.
func (p PSN) Less(q PSN) bool { return p.Diff(q) < 0 }

// LessEq reports whether p comes before q or equals it.
func (p PSN) LessEq(q PSN) bool { return p.Diff(q) <= 0 }

// InWindow reports whether p lies in the n PSNs starting at start, that is
// start ≤ p < start+n in sequence order. n must not exceed 2^23.
func (p PSN) InWindow(start PSN, n uint32) bool {
	return uint32(p-start)&PSNMask < n
}
