package verbs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Endpoint is what two sides of a connection exchange out of band
// (ibv_rc_pingpong sends the same over TCP): QP number, first PSN, GID and,
// as a goverbs extension, the UDP port when it is not 4791. A UD peer
// needs the same but the PSN, and the Q_Key agreed on. It crosses as one
// line of text (String, ParseEndpoint; in JSON as that text); what a peer
// WRITEs or READs needs besides, the address and rkey of an MR
// (MR.Addr, MR.RKey), the program sends its own way.
type Endpoint struct {
	QPN  QPN    // the QP's number, the peer's QPAttr.DestQPN
	PSN  uint32 // the QP's first send PSN, the peer's QPAttr.RQPSN
	GID  GID    // the device's GID, the peer's AHAttr.DGID
	Port uint16 // the device's UDP port, the peer's AHAttr.DestPort
}

// Endpoint describes this QP for the peer, with psn as its first send PSN:
// any 24-bit value, the same that ConnectRC is given, usually a random
// one (rand.Uint32() & 0xffffff, as ibv_rc_pingpong draws it) so that the
// packets of an earlier connection between the same QP numbers fall
// outside the new one's window; the bits above 24 are ignored.
func (qp *QP) Endpoint(psn uint32) Endpoint {
	a := qp.pd.dev.Addr()
	return Endpoint{QPN: qp.QPN(), PSN: psn & 0xffffff, GID: GIDFromAddr(a.Addr()), Port: a.Port()}
}

// String returns e in the words of ibv_rc_pingpong's address lines, which
// ParseEndpoint reads back: "QPN 0x000011, PSN 0x00a1b2, GID
// ::ffff:127.0.0.1, port 4791".
func (e Endpoint) String() string {
	return fmt.Sprintf("QPN 0x%06x, PSN 0x%06x, GID %v, port %d", uint32(e.QPN), e.PSN, e.GID, e.Port)
}

// MarshalText returns e.String(), so that an Endpoint travels as text in
// JSON, flags and the like. A QPN or PSN beyond 24 bits, which no QP has
// and ParseEndpoint would refuse, fails with ErrInvalidArgument.
func (e Endpoint) MarshalText() ([]byte, error) {
	if e.QPN > 0xffffff || e.PSN > 0xffffff {
		return nil, errorf("marshal endpoint", "%w: QPN %#x or PSN %#x beyond 24 bits", ErrInvalidArgument, uint32(e.QPN), e.PSN)
	}
	return []byte(e.String()), nil
}

// UnmarshalText sets e from text in String's form (ParseEndpoint).
func (e *Endpoint) UnmarshalText(text []byte) error {
	p, err := ParseEndpoint(string(text))
	if err != nil {
		return err
	}
	*e = p
	return nil
}

// ParseEndpoint reads an endpoint in String's form, space around its
// fields (a line's newline) ignored. The QPN and PSN are hex after 0x,
// decimal otherwise, and the GID may be an IPv4 address, which stands for
// its IPv4-mapped GID.
func ParseEndpoint(s string) (Endpoint, error) {
	var e Endpoint
	fields := strings.Split(s, ",")
	keys := [...]string{"QPN", "PSN", "GID", "port"}
	if len(fields) != len(keys) {
		return e, endpointErr(s, errors.New(`want "QPN q, PSN p, GID g, port n"`))
	}
	for i, f := range fields {
		key, v, ok := strings.Cut(strings.TrimSpace(f), " ")
		v = strings.TrimSpace(v)
		if !ok || key != keys[i] {
			return e, endpointErr(s, fmt.Errorf("field %d is %q, want %s and its value", i+1, f, keys[i]))
		}
		var err error
		switch i {
		case 0:
			var n uint64
			n, err = parse24(v)
			e.QPN = QPN(n)
		case 1:
			var n uint64
			n, err = parse24(v)
			e.PSN = uint32(n)
		case 2:
			e.GID, err = parseGID(v)
		case 3:
			var n uint64
			n, err = strconv.ParseUint(v, 10, 16)
			e.Port = uint16(n)
		}
		if ne, ok := err.(*strconv.NumError); ok {
			err = fmt.Errorf("%q: %w", ne.Num, ne.Err)
		}
		if err != nil {
			return Endpoint{}, endpointErr(s, fmt.Errorf("%s: %w", key, err))
		}
	}
	return e, nil
}

// parse24 reads a 24-bit number, hex after 0x or 0X, decimal otherwise
// (leading zeros too, which strconv's base 0 would take for octal).
func parse24(v string) (uint64, error) {
	if h, ok := strings.CutPrefix(v, "0x"); ok {
		return strconv.ParseUint(h, 16, 24)
	}
	if h, ok := strings.CutPrefix(v, "0X"); ok {
		return strconv.ParseUint(h, 16, 24)
	}
	return strconv.ParseUint(v, 10, 24)
}

func endpointErr(s string, err error) error {
	return errorf("parse endpoint", "%w: %q: %w", ErrInvalidArgument, s, err)
}
