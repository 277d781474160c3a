package wire

// PadFor returns the number of pad bytes after n payload bytes (IBA 9.2.4):
// the payload is padded to a multiple of four.
func PadFor(n int) int { return -n & 3 }

// PacketLen returns the length of a transport packet of opcode op carrying n
// payload bytes: headers, payload, pad and ICRC.
func PacketLen(op Opcode, n int) int {
	return op.Info().HeaderLen + n + PadFor(n) + ICRCSize
}

// NewPacket lays out a packet in buf[headroom:], leaving the first headroom
// bytes for lower-layer headers the caller may add. It writes the BTH from
// f, except PadCount, which it derives from payloadLen; zeroes the extended
// headers, the pad and the ICRC; and leaves the payload bytes untouched so
// the caller can copy them straight from the source memory into
// [Packet.Payload]. Fill the extended headers through the views, then call
// [Packet.SealICRC].
//
// It fails if the opcode is unknown, carries no payload but payloadLen > 0,
// or the buffer is too small. It does not allocate.
func NewPacket(buf []byte, headroom int, f *BTHFields, payloadLen int) (Packet, error) {
	return layOut(buf, headroom, f, payloadLen, payloadLen)
}

// HeadLen returns the length of the head of a packet of opcode op
// carrying n payload bytes (NewPacketHead): headers, pad and ICRC.
func HeadLen(op Opcode, n int) int { return PacketLen(op, n) - n }

// NewPacketHead lays out in buf the head of a packet with payloadLen
// payload bytes: the packet without its payload, headers, pad and ICRC
// trailer end to end, HeadLen bytes. A sender whose link gathers the
// payload from where it lies, between the headers and the pad, keeps only
// this much of the packet in memory of its own. The BTH is the whole
// packet's (its PadCount too) and the extended headers are filled through
// the views as in a packet; the methods whose work depends on the payload
// take its length, as elided: [Packet.StartICRCElided],
// [Packet.ResealIPIDElided]. [Packet.SealICRCState] seals a head as a
// packet.
func NewPacketHead(buf []byte, f *BTHFields, payloadLen int) (Packet, error) {
	return layOut(buf, 0, f, payloadLen, 0)
}

// layOut is NewPacket for a packet of payloadLen payload bytes of which
// the first kept lie in it (all or none).
func layOut(buf []byte, headroom int, f *BTHFields, payloadLen, kept int) (Packet, error) {
	info := f.Opcode.Info()
	switch {
	case !info.Valid():
		return nil, ErrUnknownOpcode
	case payloadLen < 0, payloadLen > 0 && info.Flags&OpPayload == 0:
		return nil, ErrPayloadLength
	}
	n := PacketLen(f.Opcode, payloadLen) - payloadLen + kept
	if headroom < 0 || len(buf)-headroom < n {
		return nil, ErrBufferTooSmall
	}
	p := Packet(buf[headroom : headroom+n : headroom+n])
	bth := *f
	bth.PadCount = PadFor(payloadLen)
	p.BTH().Encode(&bth)
	clear(p[BTHSize:info.HeaderLen])
	clear(p[info.HeaderLen+kept:])
	return p, nil
}
