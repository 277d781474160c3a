package wire

import "encoding/binary"

// Packet is a view of one RoCEv2 transport packet: the UDP payload, from the
// BTH through the ICRC trailer.
//
//	+-----+--------------------+---------+-----+------+
//	| BTH | extended headers   | payload | pad | ICRC |
//	+-----+--------------------+---------+-----+------+
//	  12    0–32 (by opcode)     0–PMTU    0–3    4
//
// Call [Packet.Validate] before any other method on bytes from the network;
// after it succeeds every accessor is safe. A header accessor returns nil
// when the opcode does not carry that header.
type Packet []byte

// Validate checks, before reading anything else, that p is long enough for a
// BTH and ICRC, that the opcode is known, that the transport version is 0,
// that the opcode's headers fit, and that the pad count is consistent with
// the payload (doc/protocol.md §1.4 item 1 and §5.3; IBA 9.2). It does
// not check the ICRC, which needs the envelope: see [Packet.CheckICRC].
func (p Packet) Validate() error {
	if len(p) < BTHSize+ICRCSize {
		return ErrTooShort
	}
	bth := BTH(p)
	info := bth.Opcode().Info()
	if !info.Valid() {
		return ErrUnknownOpcode
	}
	if bth.TransportVersion() != 0 {
		return ErrTransportVersion
	}
	if len(p) < info.HeaderLen+ICRCSize {
		return ErrTruncated
	}
	rest := len(p) - info.HeaderLen - ICRCSize // payload + pad
	pad := bth.PadCount()
	if info.Flags&OpPayload == 0 {
		if rest != 0 || pad != 0 {
			return ErrUnexpectedData
		}
		return nil
	}
	// The pad brings the payload to a multiple of four bytes (IBA 9.2.4).
	if pad > rest || rest%4 != 0 {
		return ErrPad
	}
	return nil
}

// BTH returns the base transport header.
func (p Packet) BTH() BTH { return BTH(p[:BTHSize]) }

// Opcode returns the opcode.
func (p Packet) Opcode() Opcode { return Opcode(p[bthOpcode]) }

// Info returns the opcode's table entry.
func (p Packet) Info() *OpInfo { return p.Opcode().Info() }

// header returns the extended header h, or nil if the opcode lacks it.
func (p Packet) header(h Header) []byte {
	off, ok := p.Info().Offset(h)
	if !ok {
		return nil
	}
	return p[off : off+h.Size() : off+h.Size()]
}

// RETH returns the RDMA extended header, or nil.
func (p Packet) RETH() RETH { return RETH(p.header(HdrRETH)) }

// AETH returns the ACK extended header, or nil.
func (p Packet) AETH() AETH { return AETH(p.header(HdrAETH)) }

// AtomicETH returns the atomic extended header, or nil.
func (p Packet) AtomicETH() AtomicETH { return AtomicETH(p.header(HdrAtomicETH)) }

// AtomicAckETH returns the atomic acknowledge extended header, or nil.
func (p Packet) AtomicAckETH() AtomicAckETH { return AtomicAckETH(p.header(HdrAtomicAckETH)) }

// ImmDt returns the immediate data header, or nil.
func (p Packet) ImmDt() ImmDt { return ImmDt(p.header(HdrImmDt)) }

// IETH returns the invalidate extended header, or nil.
func (p Packet) IETH() IETH { return IETH(p.header(HdrIETH)) }

// DETH returns the datagram extended header, or nil.
func (p Packet) DETH() DETH { return DETH(p.header(HdrDETH)) }

// FETH returns the flush extended header, or nil.
func (p Packet) FETH() FETH { return FETH(p.header(HdrFETH)) }

// Payload returns the payload, without pad and ICRC.
func (p Packet) Payload() []byte {
	end := len(p) - ICRCSize - BTH(p).PadCount()
	return p[p.Info().HeaderLen:end:end]
}

// ICRC returns the ICRC trailer. It is stored least-significant byte first
// (doc/protocol.md §4.2).
func (p Packet) ICRC() uint32 { return binary.LittleEndian.Uint32(p[len(p)-ICRCSize:]) }

// ComputeICRC returns the ICRC p should carry inside the datagram e describes.
func (p Packet) ComputeICRC(e *Envelope) uint32 { return ICRC(e, p[:len(p)-ICRCSize]) }

// CheckICRC returns nil if the trailer matches the computed ICRC, else
// [ErrBadICRC]. A receiver drops such packets silently (no NAK). It is safe
// on unvalidated bytes: a packet too short for a BTH and trailer gives
// [ErrTooShort].
func (p Packet) CheckICRC(e *Envelope) error {
	if len(p) < BTHSize+ICRCSize {
		return ErrTooShort
	}
	if p.ComputeICRC(e) != p.ICRC() {
		return ErrBadICRC
	}
	return nil
}

// SealICRC computes the ICRC for the datagram e describes and writes it into
// the trailer. Call it last, after every header and the payload are written.
func (p Packet) SealICRC(e *Envelope) {
	binary.LittleEndian.PutUint32(p[len(p)-ICRCSize:], p.ComputeICRC(e))
}
