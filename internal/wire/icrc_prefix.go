package wire

import "net/netip"

// A packet's ICRC starts with a pass over the IP and UDP headers of its
// datagram (28 bytes of IPv4 and UDP after the pseudo-LRH, 44 of IPv6 and
// UDP), which differ between the packets of one envelope only in the
// lengths and the IPv4 Identification. The CRC is linear, so the register
// after them is the register for the envelope with those fields zero,
// computed once by Envelope.Prepare, plus a term per byte of each field,
// looked up: each packet's ICRC then starts at its BTH.

// icrcPrefix is a prepared envelope's register and what it depends on.
type icrcPrefix struct {
	key prefixKey
	reg uint32 // after the headers with lengths and ID zero (no final XOR)
	v4  bool
	ok  bool
}

// prefixKey is what of an envelope its register depends on: all of it
// but the IPv4 Identification.
type prefixKey struct {
	src, dst                netip.Addr
	flags, srcPort, dstPort uint16
}

func (e *Envelope) prefixKey() prefixKey {
	return prefixKey{e.Src, e.Dst, e.FlagsFragment, e.SrcPort, e.DstPort}
}

// Prepare precomputes the ICRC's pass over the envelope's IP and UDP
// headers, which the ICRC of every packet sealed or checked with it then
// skips. Prepare an envelope once it is filled in; one changed after
// Prepare (but for its IPID) has its ICRCs computed the long way, as an
// envelope never prepared has, until it is prepared again.
func (e *Envelope) Prepare() {
	var buf icrcScratch
	crc, k := e.headers(&buf, 0, 0, 0)
	e.prefix = icrcPrefix{key: e.prefixKey(), reg: slicing8(crc, buf[:k]), v4: e.IPv4(), ok: true}
}

// register returns the register after the pseudo-LRH and the IP and UDP
// headers of e's datagram with UDP length udpLen and IPv4 Identification
// id, and false if e is not prepared (or changed since).
func (c *icrcPrefix) register(e *Envelope, udpLen int, id uint16) (uint32, bool) {
	// Field by field: compared whole, the key takes a call to memequal.
	k := &c.key
	if !c.ok || k.src != e.Src || k.dst != e.Dst || k.srcPort != e.SrcPort ||
		k.dstPort != e.DstPort || k.flags != e.FlagsFragment {
		return 0, false
	}
	u := uint16(udpLen)
	if c.v4 {
		t, tot := &prefixTerms4, u+ipv4HeaderSize
		return c.reg ^ t[0][tot>>8] ^ t[1][byte(tot)] ^ t[2][id>>8] ^ t[3][byte(id)] ^
			t[4][u>>8] ^ t[5][byte(u)], true
	}
	t := &prefixTerms6
	return c.reg ^ t[0][u>>8] ^ t[1][byte(u)], true
}

// prefixTerms4[i][v] is what byte value v adds to the register after the
// IPv4 and UDP headers when it stands in place of zero at the i-th byte of
// the total length, Identification and UDP length (offsets 2 to 5, 24
// and 25, high bytes first).
var prefixTerms4 = [6][256]uint32(headerTerms(ipv4HeaderSize+udpHeaderSize, [][]int{{2}, {3}, {4}, {5}, {24}, {25}}))

// prefixTerms6 is the same for IPv6, whose payload length (offset 0 after
// the constant first word) and UDP length (offset 40) are one value: each
// table adds a byte at both places.
var prefixTerms6 = [2][256]uint32(headerTerms(ipv6HeaderSize-4+udpHeaderSize, [][]int{{0, 40}, {1, 41}}))

// headerTerms builds, for each list of offsets into headers of length
// size, the table of what a byte value at all of those offsets adds to
// the register after them: the CRC of that byte from a zero register,
// advanced over the zero bytes that follow it. That is linear in the
// byte, so only the eight one-bit values are advanced and the others are
// sums of them, which keeps the package's start-up short.
func headerTerms(size int, offsets [][]int) (t [][256]uint32) {
	t = make([][256]uint32, len(offsets))
	for i, offs := range offsets {
		for b := range 8 {
			for _, o := range offs {
				r := icrcTab[0][1<<b]
				for range size - o - 1 {
					r = zeroByte(r)
				}
				t[i][1<<b] ^= r
			}
		}
		for v := 3; v < 256; v++ {
			if low := v & -v; low != v {
				t[i][v] = t[i][v-low] ^ t[i][low]
			}
		}
	}
	return t
}
