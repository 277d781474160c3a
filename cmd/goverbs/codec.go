package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/goverbs/goverbs/internal/wire"
)

// codecDemo builds the exchange of doc/protocol.md §4.4 Example C — an RC SEND_ONLY of
// "hello" from QP 0x11 to QP 0x12 and the responder's ACK — prints the
// bytes and the decode, and shows the ICRC catching a bit flipped in flight.
func codecDemo(w io.Writer) error {
	req := wire.Envelope{
		Src: netip.MustParseAddr("192.168.1.1"), Dst: netip.MustParseAddr("192.168.1.2"),
		FlagsFragment: wire.FlagDontFragment, SrcPort: 0xdf94, DstPort: wire.UDPPort,
	}
	resp := wire.Envelope{
		Src: req.Dst, Dst: req.Src,
		FlagsFragment: wire.FlagDontFragment, SrcPort: 0xf806, DstPort: wire.UDPPort,
	}
	buf := make([]byte, 2*64)

	fmt.Fprintln(w, "goverbs RoCEv2 codec demo")
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Requester QP 0x000011 sends "hello" with SEND_ONLY to responder QP 0x000012:`)
	send, err := wire.NewPacket(buf[:64], 0, &wire.BTHFields{
		Opcode: wire.RCSendOnly, PKey: 0xffff, DestQP: 0x12, AckRequest: true, PSN: 0,
	}, len("hello"))
	if err != nil {
		return err
	}
	copy(send.Payload(), "hello")
	send.SealICRC(&req)
	show(w, &req, send)
	dumpBytes(w, send)

	fmt.Fprintln(w, "The responder acknowledges PSN 0 (message sequence number 1):")
	ack, err := wire.NewPacket(buf[64:], 0, &wire.BTHFields{Opcode: wire.RCAcknowledge, PKey: 0xffff, DestQP: 0x11}, 0)
	if err != nil {
		return err
	}
	ack.AETH().Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: 1})
	ack.SealICRC(&resp)
	show(w, &resp, ack)
	dumpBytes(w, ack)

	fmt.Fprintln(w, "One payload bit flipped in flight: the receiver's ICRC check drops the packet:")
	send.Payload()[0] ^= 0x20
	show(w, &req, send)
	return nil
}

// show prints the packet's one-line description.
func show(w io.Writer, e *wire.Envelope, p wire.Packet) {
	line, _ := describe(e, p)
	fmt.Fprintf(w, "  %s\n", line)
}

// dumpBytes prints p as indented hex, 16 bytes a line.
func dumpBytes(w io.Writer, p []byte) {
	for _, line := range strings.SplitAfter(strings.TrimRight(hex.Dump(p), "\n"), "\n") {
		fmt.Fprintf(w, "    %s", line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}
