package perftest

import (
	"errors"
	"fmt"
	"strconv"
)

// KeySize is the length of the key message in its GID form, which RoCE
// always uses: 107 characters and a NUL (doc/tools.md §2.4).
const KeySize = 108

// Dest is one QP's key message: what the peer needs to reach it.
type Dest struct {
	LID      uint16
	OutReads uint16 // responder depth for READ/atomics this side offers
	QPN      uint32
	PSN      uint32 // this side's send PSN
	RKey     uint32
	VAddr    uint64 // where the peer's RDMA goes
	GID      [16]byte
	SRQN     uint32
}

// Marshal renders the key message:
// LLLL:OOOO:QQQQQQ:PPPPPP:RRRRRRRR:VVVVVVVVVVVVVVVV:g0:...:g15:SSSSSSSS: and a NUL.
func (d *Dest) Marshal() [KeySize]byte {
	s := fmt.Sprintf("%04x:%04x:%06x:%06x:%08x:%016x:", d.LID, d.OutReads, d.QPN&0xffffff, d.PSN&0xffffff, d.RKey, d.VAddr)
	for _, b := range d.GID {
		s += fmt.Sprintf("%02x:", b)
	}
	s += fmt.Sprintf("%08x:", d.SRQN)
	var out [KeySize]byte
	copy(out[:], s) // 107 characters; the NUL stays
	return out
}

// ErrKey reports a malformed key message.
var ErrKey = errors.New("malformed perftest key message")

// Field offsets and widths of the key message (doc/tools.md §2.4).
var keyFields = []struct{ off, width int }{
	{0, 4}, {5, 4}, {10, 6}, {17, 6}, {24, 8}, {33, 16},
}

const (
	keyGID  = 50 // g0; each byte is 2 digits and a colon
	keySRQN = 98
)

// ParseDest parses a key message, checking the separators at their
// offsets.
func ParseDest(b []byte) (Dest, error) {
	var d Dest
	if len(b) != KeySize || b[KeySize-1] != 0 || b[KeySize-2] != ':' {
		return d, fmt.Errorf("%w: %q", ErrKey, b)
	}
	hex := func(off, width int) (uint64, error) {
		if b[off+width] != ':' {
			return 0, ErrKey
		}
		return strconv.ParseUint(string(b[off:off+width]), 16, 64)
	}
	var v [6]uint64
	for i, f := range keyFields {
		x, err := hex(f.off, f.width)
		if err != nil {
			return d, fmt.Errorf("%w: %q", ErrKey, b)
		}
		v[i] = x
	}
	for i := range 16 {
		x, err := hex(keyGID+3*i, 2)
		if err != nil {
			return d, fmt.Errorf("%w: %q", ErrKey, b)
		}
		d.GID[i] = byte(x)
	}
	srqn, err := hex(keySRQN, 8)
	if err != nil {
		return d, fmt.Errorf("%w: %q", ErrKey, b)
	}
	d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr = uint16(v[0]), uint16(v[1]), uint32(v[2]), uint32(v[3]), uint32(v[4]), v[5]
	d.SRQN = uint32(srqn)
	return d, nil
}
