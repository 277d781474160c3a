package wire

import (
	"strconv"
	"strings"
)

// String describes the packet on one line for logs and packet dumps, such
// as "RC_SEND_ONLY dqp=0x000012 psn=0 A pad=3 payload=5". It validates
// first and describes what is wrong with malformed bytes. Not for the data
// path: it allocates.
func (p Packet) String() string {
	if err := p.Validate(); err != nil {
		return "malformed (" + err.Error() + ")"
	}
	var s strings.Builder
	b := p.BTH()
	s.WriteString(b.Opcode().String())
	s.WriteString(" dqp=0x")
	s.WriteString(hex24(b.DestQP()))
	s.WriteString(" psn=")
	s.WriteString(strconv.FormatUint(uint64(b.PSN()), 10))
	for _, f := range []struct {
		on   bool
		name string
	}{{b.AckRequest(), "A"}, {b.SolicitedEvent(), "SE"}, {b.MigReq(), "M"}, {b.FECN(), "FECN"}, {b.BECN(), "BECN"}} {
		if f.on {
			s.WriteString(" " + f.name)
		}
	}
	if b.PKey() != 0xffff {
		s.WriteString(" pkey=0x" + strconv.FormatUint(uint64(b.PKey()), 16))
	}
	if h := p.FETH(); h != nil {
		s.WriteString(" feth(plt=" + strconv.Itoa(int(h.PlacementType())) + " sel=" + strconv.Itoa(int(h.Selectivity())) + ")")
	}
	if h := p.DETH(); h != nil {
		s.WriteString(" deth(qkey=0x" + strconv.FormatUint(uint64(h.QKey()), 16) + " sqp=0x" + hex24(h.SrcQP()) + ")")
	}
	if h := p.RETH(); h != nil {
		s.WriteString(" reth(va=0x" + strconv.FormatUint(h.VA(), 16) + " rkey=0x" + strconv.FormatUint(uint64(h.RKey()), 16) +
			" len=" + strconv.FormatUint(uint64(h.DMALength()), 10) + ")")
	}
	if h := p.AtomicETH(); h != nil {
		s.WriteString(" atomic(va=0x" + strconv.FormatUint(h.VA(), 16) + " rkey=0x" + strconv.FormatUint(uint64(h.RKey()), 16) +
			" swap/add=0x" + strconv.FormatUint(h.SwapAdd(), 16) + " cmp=0x" + strconv.FormatUint(h.Compare(), 16) + ")")
	}
	if h := p.AETH(); h != nil {
		s.WriteString(" aeth(" + h.Syndrome().String() + " msn=" + strconv.FormatUint(uint64(h.MSN()), 10) + ")")
	}
	if h := p.AtomicAckETH(); h != nil {
		s.WriteString(" orig=0x" + strconv.FormatUint(h.OrigData(), 16))
	}
	if h := p.ImmDt(); h != nil {
		s.WriteString(" imm=0x" + strconv.FormatUint(uint64(h.Imm()), 16))
	}
	if h := p.IETH(); h != nil {
		s.WriteString(" inv=0x" + strconv.FormatUint(uint64(h.RKey()), 16))
	}
	if p.Info().Is(OpPayload) {
		s.WriteString(" pad=" + strconv.Itoa(b.PadCount()) + " payload=" + strconv.Itoa(len(p.Payload())))
	}
	return s.String()
}

// String describes the syndrome: "ACK credits=unlimited", "RNR NAK 640µs"
// or "NAK invalid request".
func (s Syndrome) String() string {
	switch s.Type() {
	case SyndromeACK:
		n, ok := s.CreditCode().Credits()
		if !ok {
			return "ACK credits=unlimited"
		}
		return "ACK credits=" + strconv.Itoa(n)
	case SyndromeRNRNAK:
		return "RNR NAK " + s.RNRTimer().Duration().String()
	case SyndromeNAK:
		return "NAK " + s.NAKCode().String()
	}
	return "reserved syndrome 0x" + strconv.FormatUint(uint64(s), 16)
}

func hex24(v uint32) string {
	h := strconv.FormatUint(uint64(v), 16)
	return strings.Repeat("0", max(0, 6-len(h))) + h
}
