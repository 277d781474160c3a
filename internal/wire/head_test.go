package wire

import (
	"bytes"
	"errors"
	"testing"
)

// A packet head sealed with its payload gathered from elsewhere is the
// packet NewPacket builds with that payload in it, byte for byte once the
// payload is put between its headers and its pad, and resealed for another
// IPv4 ID it gets the same trailer: what a sender that gathers puts on
// the wire is what one that copies does. The head is laid out over stale
// bytes, which must not leak.
func TestPacketHead(t *testing.T) {
	payload := make([]byte, 4096)
	for i := range payload {
		payload[i] = byte(i*13 + 5)
	}
	for _, c := range []struct {
		op Opcode
		n  int
	}{
		{RCWriteFirst, 4096},
		{RCWriteMiddle, 1024},
		{RCSendLastWithImmediate, 1001},
		{RCReadResponseOnly, 700},
		{UDSendOnly, 513},
	} {
		f := &BTHFields{Opcode: c.op, PKey: 0xffff, DestQP: 0x12, PSN: 77}
		whole, err := NewPacket(make([]byte, 8192), 0, f, c.n)
		if err != nil {
			t.Fatal(err)
		}
		fillExtended(whole)
		copy(whole.Payload(), payload)
		whole.SealICRC(&testEnvelope)

		head, err := NewPacketHead(bytes.Repeat([]byte{0xee}, 64), f, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(head) != HeadLen(c.op, c.n) || len(head)+c.n != len(whole) {
			t.Fatalf("%v with %d bytes: head of %d bytes (HeadLen %d), packet of %d", c.op, c.n, len(head), HeadLen(c.op, c.n), len(whole))
		}
		fillExtended(head)
		s := head.StartICRCElided(&testEnvelope, c.n)
		s.Write(payload[:c.n])
		head.SealICRCState(s)
		h := c.op.Info().HeaderLen
		if got := append(append(bytes.Clone(head[:h]), payload[:c.n]...), head[h:]...); !bytes.Equal(got, whole) {
			t.Errorf("%v with %d bytes: head and payload\n% x\nwant\n% x", c.op, c.n, got[:h], whole[:h])
		}
		whole.ResealIPID(0, 0x1234)
		head.ResealIPIDElided(0, 0x1234, c.n)
		if !bytes.Equal(head[len(head)-ICRCSize:], whole[len(whole)-ICRCSize:]) {
			t.Errorf("%v with %d bytes: resealed trailer % x, want % x", c.op, c.n, head[len(head)-ICRCSize:], whole[len(whole)-ICRCSize:])
		}
	}
	if _, err := NewPacketHead(make([]byte, 15), &BTHFields{Opcode: RCWriteMiddle}, 4096); !errors.Is(err, ErrBufferTooSmall) {
		t.Errorf("a head in 15 bytes (it needs 16): %v", err)
	}
	if _, err := NewPacketHead(make([]byte, 64), &BTHFields{Opcode: RCAcknowledge}, 4); !errors.Is(err, ErrPayloadLength) {
		t.Errorf("the head of an ACK with payload: %v", err)
	}
}

// fillExtended writes a pattern into p's extended headers.
func fillExtended(p Packet) {
	for i := BTHSize; i < p.Info().HeaderLen; i++ {
		p[i] = byte(i * 3)
	}
}
