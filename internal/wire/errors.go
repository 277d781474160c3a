package wire

import "errors"

// Errors returned by [Packet.Validate] and [NewPacket]. They are pre-built so
// that rejecting a packet allocates nothing; compare with errors.Is and count
// drops by which one it was.
var (
	ErrTooShort         = errors.New("wire: packet shorter than BTH and ICRC")
	ErrUnknownOpcode    = errors.New("wire: unsupported opcode")
	ErrTransportVersion = errors.New("wire: BTH transport version is not 0")
	ErrTruncated        = errors.New("wire: packet shorter than its opcode's headers")
	ErrPad              = errors.New("wire: pad count does not fit the payload")
	ErrUnexpectedData   = errors.New("wire: payload on an opcode that carries none")
	ErrBadICRC          = errors.New("wire: ICRC mismatch")
	ErrBufferTooSmall   = errors.New("wire: buffer too small for the packet")
	ErrPayloadLength    = errors.New("wire: invalid payload length")
)
