package pingpong

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/verbs"
)

// dest is what each side of ibv_rc_pingpong tells the other over TCP
// (doc/tools.md §1.2): LID, QP number, first PSN and GID.
type dest struct {
	lid uint16
	qpn uint32
	psn uint32
	gid verbs.GID
}

// msgSize is the length of the address message: 51 characters and a NUL.
const msgSize = 52

// marshal renders the message exactly as rc_pingpong's
// sprintf("%04x:%06x:%06x:%s", ...) does, GID as 32 hex digits.
func (d *dest) marshal() []byte {
	s := fmt.Sprintf("%04x:%06x:%06x:%s", d.lid, d.qpn, d.psn, hex.EncodeToString(d.gid[:]))
	return append([]byte(s), 0)
}

var errBadMessage = errors.New("malformed address message")

// parseDest parses the peer's message; the numbers are hex of any width,
// colon separated, the GID exactly 32 hex digits.
func parseDest(b []byte) (dest, error) {
	s, _, _ := strings.Cut(string(b), "\x00")
	f := strings.Split(s, ":")
	if len(f) != 4 || len(f[3]) != 32 {
		return dest{}, fmt.Errorf("%w: %q", errBadMessage, s)
	}
	var d dest
	var v [3]uint64
	for i := range 3 {
		n, err := strconv.ParseUint(f[i], 16, 32)
		if err != nil {
			return dest{}, fmt.Errorf("%w: %q", errBadMessage, s)
		}
		v[i] = n
	}
	if _, err := hex.Decode(d.gid[:], []byte(f[3])); err != nil {
		return dest{}, fmt.Errorf("%w: %q", errBadMessage, s)
	}
	d.lid, d.qpn, d.psn = uint16(v[0]), uint32(v[1]), uint32(v[2])&0xffffff
	return d, nil
}
