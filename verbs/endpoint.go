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
// JSON, flags and the like.
func (e Endpoint) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText sets e from text in String's form (ParseEndpoint).
func (e *Endpoint) UnmarshalText(text []byte) error {
	p, err := ParseEndpoint(string(text))
	if err != nil {
		return err
	}
	*e = p
	return nil
}

// ParseEndpoint reads an endpoint in String's form. The QPN and PSN may be
// written in decimal too, and the GID as an IPv4 address, which stands
// for its IPv4-mapped GID.
func ParseEndpoint(s string) (Endpoint, error) {
	var e Endpoint
	fields := strings.Split(s, ", ")
	keys := [...]string{"QPN", "PSN", "GID", "port"}
	if len(fields) != len(keys) {
		return e, endpointErr(s, errors.New(`want "QPN q, PSN p, GID g, port n"`))
	}
	for i, f := range fields {
		key, v, ok := strings.Cut(f, " ")
		if !ok || key != keys[i] {
			return e, endpointErr(s, fmt.Errorf("field %d is %q, want %s and its value", i+1, f, keys[i]))
		}
		var err error
		switch i {
		case 0:
			var n uint64
			n, err = strconv.ParseUint(v, 0, 24)
			e.QPN = QPN(n)
		case 1:
			var n uint64
			n, err = strconv.ParseUint(v, 0, 24)
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

func endpointErr(s string, err error) error {
	return errorf("parse endpoint", "%w: %q: %w", ErrInvalidArgument, s, err)
}
