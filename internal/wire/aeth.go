package wire

// AETH is a view of the 4-byte ACK Extended Transport Header (IBA 9.3.5),
// carried by ACKNOWLEDGE, ATOMIC ACKNOWLEDGE and RDMA READ RESPONSE
// FIRST/LAST/ONLY.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Syndrome    |                      MSN                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The syndrome says ACK, RNR NAK or NAK (see [Syndrome]); MSN is the
// responder's 24-bit message sequence number (IBA 9.7.5.1.3).
type AETH []byte

// AETHSize is the length of the ACK Extended Transport Header.
const AETHSize = 4

const (
	aethSyndrome = 0
	aethMSN      = 1
)

// Syndrome returns the ACK/NAK syndrome.
func (b AETH) Syndrome() Syndrome { return Syndrome(b[aethSyndrome]) }

// MSN returns the 24-bit message sequence number.
func (b AETH) MSN() uint32 { return get24(b[aethMSN:]) }

// SetSyndrome sets the syndrome.
func (b AETH) SetSyndrome(s Syndrome) { b[aethSyndrome] = byte(s) }

// SetMSN sets the message sequence number; higher bits of msn are dropped.
func (b AETH) SetMSN(msn uint32) { put24(b[aethMSN:], msn) }

// AETHFields holds every AETH field.
type AETHFields struct {
	Syndrome Syndrome
	MSN      uint32
}

// Encode writes all fields of f into b.
func (b AETH) Encode(f *AETHFields) {
	b.SetSyndrome(f.Syndrome)
	b.SetMSN(f.MSN)
}

// Decode returns all fields of b.
func (b AETH) Decode() AETHFields { return AETHFields{Syndrome: b.Syndrome(), MSN: b.MSN()} }
