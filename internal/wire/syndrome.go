package wire

// Syndrome is the AETH syndrome byte (IBA 9.7.5.1.1, table 43):
//
//	bit  7    6 5    4 3 2 1 0
//	    [0] [type] [   value  ]
//
// type 00 = ACK (value = credit count code), 01 = RNR NAK (value = RNR timer
// code), 11 = NAK (value = NAK code), 10 = reserved.
type Syndrome uint8

// SyndromeType is bits 6–5 of a syndrome.
type SyndromeType uint8

// Syndrome types.
const (
	SyndromeACK      SyndromeType = 0
	SyndromeRNRNAK   SyndromeType = 1
	SyndromeReserved SyndromeType = 2
	SyndromeNAK      SyndromeType = 3
)

// Type returns the kind of acknowledgement.
func (s Syndrome) Type() SyndromeType { return SyndromeType(s >> 5 & 3) }

// Value returns the low five bits: credit code, RNR timer or NAK code.
func (s Syndrome) Value() uint8 { return uint8(s & 0x1f) }

// CreditCode returns the ACK credit count code; meaningful for ACKs only.
func (s Syndrome) CreditCode() CreditCode { return CreditCode(s.Value()) }

// RNRTimer returns the RNR NAK timer code; meaningful for RNR NAKs only.
func (s Syndrome) RNRTimer() RNRTimer { return RNRTimer(s.Value()) }

// NAKCode returns the NAK code; meaningful for NAKs only.
func (s Syndrome) NAKCode() NAKCode { return NAKCode(s.Value()) }

// ACKSyndrome returns an ACK syndrome carrying credit code c.
func ACKSyndrome(c CreditCode) Syndrome { return Syndrome(c & 0x1f) }

// RNRNAKSyndrome returns an RNR NAK syndrome carrying timer code t.
func RNRNAKSyndrome(t RNRTimer) Syndrome {
	return Syndrome(SyndromeRNRNAK)<<5 | Syndrome(t&0x1f)
}

// NAKSyndrome returns a NAK syndrome carrying code c.
func NAKSyndrome(c NAKCode) Syndrome { return Syndrome(SyndromeNAK)<<5 | Syndrome(c&0x1f) }

// CreditCode is the 5-bit end-to-end flow-control credit code of an ACK.
type CreditCode uint8

// CreditsUnlimited is the credit code meaning "no end-to-end flow control";
// rxe sends it in every ACK and ignores received credits.
const CreditsUnlimited CreditCode = 0x1f

// creditCounts maps codes 0x00–0x1E to the number of receive WQEs
// available (IBA 9.7.7.2.4, table 44).
var creditCounts = [31]uint16{
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
}

// Credits returns the number of receive WQEs the code advertises, or
// ok = false for [CreditsUnlimited].
func (c CreditCode) Credits() (n int, ok bool) {
	if c >= CreditsUnlimited {
		return 0, false
	}
	return int(creditCounts[c]), true
}

// NAKCode is the value of a NAK syndrome (IBA 9.7.5.2.8 and table 43).
type NAKCode uint8

// NAK codes.
const (
	NAKPSNSequenceError NAKCode = 0 // a packet was missing; the requester retransmits
	NAKInvalidRequest   NAKCode = 1
	NAKRemoteAccess     NAKCode = 2
	NAKRemoteOperation  NAKCode = 3
	NAKInvalidRDRequest NAKCode = 4
)

var nakNames = [...]string{
	NAKPSNSequenceError: "PSN sequence error",
	NAKInvalidRequest:   "invalid request",
	NAKRemoteAccess:     "remote access error",
	NAKRemoteOperation:  "remote operational error",
	NAKInvalidRDRequest: "invalid RD request",
}

// String returns the spec name of the code.
func (c NAKCode) String() string {
	if int(c) < len(nakNames) {
		return nakNames[c]
	}
	return "reserved NAK code"
}
