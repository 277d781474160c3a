package wire_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/goverbs/goverbs/internal/capture/pcapread"
	"github.com/goverbs/goverbs/internal/wire"
)

// rxeFrame is what testdata/README.md records for each captured frame.
type rxeFrame struct {
	op      wire.Opcode
	destQP  uint32
	psn     wire.PSN
	ackReq  bool
	payload int
	pad     int
	ipID    uint16
	icrc    [4]byte // as on the wire
}

// Packets sent by Linux 6.1 rdma_rxe (and some sent to it by us, which it
// accepted and answered), captured on the interop lab's tap device.
var rxeCaptures = map[string][]rxeFrame{
	"rxe-send-multi.pcap": {
		{wire.RCSendFirst, 0xabc, 0xc1532d, false, 1024, 0, 0x7ca9, [4]byte{0x52, 0xe1, 0xec, 0xe8}},
		{wire.RCSendMiddle, 0xabc, 0xc1532e, false, 1024, 0, 0x7caa, [4]byte{0x27, 0xf8, 0xa3, 0xb9}},
		{wire.RCSendMiddle, 0xabc, 0xc1532f, false, 1024, 0, 0x7cab, [4]byte{0x4b, 0x4a, 0xf2, 0x30}},
		{wire.RCSendLast, 0xabc, 0xc15330, true, 1024, 0, 0x7cac, [4]byte{0x07, 0x64, 0xf5, 0x68}},
		{wire.RCSendFirst, 0xabc, 0xc1532d, false, 1024, 0, 0x7cbd, [4]byte{0xc4, 0x7c, 0x1e, 0x2b}},
		{wire.RCSendMiddle, 0xabc, 0xc1532e, false, 1024, 0, 0x7cbe, [4]byte{0xb1, 0x65, 0x51, 0x7a}},
		{wire.RCSendMiddle, 0xabc, 0xc1532f, false, 1024, 0, 0x7cbf, [4]byte{0xdd, 0xd7, 0x00, 0xf3}},
		{wire.RCSendLast, 0xabc, 0xc15330, true, 1024, 0, 0x7cc0, [4]byte{0x26, 0xbe, 0xbb, 0x4e}},
	},
	"rxe-send-only.pcap": {
		{wire.RCSendOnly, 0xabc, 0xd65b05, true, 64, 0, 0x90b0, [4]byte{0x30, 0x3e, 0xa8, 0x80}},
		{wire.RCSendOnly, 0xabc, 0xd65b05, true, 64, 0, 0x90c4, [4]byte{0xe4, 0xea, 0xf0, 0x99}},
		{wire.RCSendOnly, 0xabc, 0xd65b05, true, 64, 0, 0x90c9, [4]byte{0xb8, 0xf7, 0x0f, 0xc9}},
	},
	"rxe-send-only-pad.pcap": {
		{wire.RCSendOnly, 0xabc, 0x888fb9, true, 61, 3, 0x9418, [4]byte{0x0b, 0xb8, 0x1a, 0x87}},
		{wire.RCSendOnly, 0xabc, 0x888fb9, true, 61, 3, 0x941c, [4]byte{0x81, 0xb3, 0x6c, 0xe4}},
		{wire.RCSendOnly, 0xabc, 0x888fb9, true, 61, 3, 0x9424, [4]byte{0x2e, 0xdc, 0x7b, 0xd9}},
	},
	"rxe-uc-send.pcap": {
		{wire.UCSendFirst, 0xabc, 0xec90fa, false, 1024, 0, 0x120b, [4]byte{0x18, 0x96, 0xb1, 0x77}},
		{wire.UCSendMiddle, 0xabc, 0xec90fb, false, 1024, 0, 0x120c, [4]byte{0x4d, 0x28, 0x84, 0xcf}},
		{wire.UCSendMiddle, 0xabc, 0xec90fc, false, 1024, 0, 0x120d, [4]byte{0x72, 0xfe, 0x7a, 0xe7}},
		{wire.UCSendLast, 0xabc, 0xec90fd, false, 1024, 0, 0x120e, [4]byte{0x36, 0xa8, 0x36, 0xf5}},
	},
	"rxe-ud-send.pcap": {
		{wire.UDSendOnly, 0xabc, 0x7af87e, false, 61, 3, 0x387b, [4]byte{0x86, 0x12, 0x47, 0x1d}},
	},
	"rxe-mw-rxe-bound.pcap": {
		{wire.RCWriteOnly, 0x11, 6636321, true, 32, 0, 0x0000, [4]byte{0x27, 0xc5, 0xb7, 0x8c}}, // ours, through rxe's window
		{wire.RCAcknowledge, 0x59aad6, 6636321, false, 0, 0, 0xd9e5, [4]byte{0xa0, 0xda, 0xbb, 0x2a}},
		{wire.RCReadRequest, 0x11, 6636322, true, 0, 0, 0x0000, [4]byte{0x2b, 0x09, 0x61, 0xc4}},
		{wire.RCReadResponseOnly, 0x59aad6, 6636322, false, 32, 0, 0xd9e6, [4]byte{0x94, 0x9c, 0x79, 0x3e}},
		{wire.RCSendOnlyWithInvalidate, 0x11, 6636323, true, 8, 0, 0x0000, [4]byte{0x9d, 0x4f, 0x8d, 0xfa}},
		{wire.RCAcknowledge, 0x59aad6, 6636323, false, 0, 0, 0xd9e7, [4]byte{0xbe, 0xff, 0x67, 0x23}},
		{wire.RCWriteOnly, 0x11, 6636324, true, 32, 0, 0x0000, [4]byte{0xbb, 0x5c, 0x1c, 0x53}},
		{wire.RCAcknowledge, 0x59aad6, 6636324, false, 0, 0, 0xd9e8, [4]byte{0x7a, 0x38, 0x07, 0x23}},
	},
	"rxe-mw-goverbs-bound.pcap": {
		{wire.RCWriteOnly, 0xc5a7b9, 1193046, true, 33, 3, 0xdf79, [4]byte{0x0a, 0xa0, 0x31, 0x51}}, // rxe's, through our window
		{wire.RCAcknowledge, 0x13, 1193046, false, 0, 0, 0x0000, [4]byte{0x95, 0x72, 0x6d, 0x57}},
		{wire.RCReadRequest, 0xc5a7b9, 1193047, true, 0, 0, 0xdf7a, [4]byte{0x36, 0x63, 0x39, 0x81}},
		{wire.RCReadResponseOnly, 0x13, 1193047, false, 33, 3, 0x0000, [4]byte{0x50, 0x31, 0x7d, 0x37}},
		{wire.RCSendOnlyWithInvalidate, 0xc5a7b9, 1193048, true, 8, 0, 0xdf7b, [4]byte{0xa7, 0xe6, 0x02, 0xe4}},
		{wire.RCAcknowledge, 0x13, 1193048, false, 0, 0, 0x0000, [4]byte{0xd8, 0xad, 0x53, 0x06}},
		{wire.RCWriteOnly, 0xc5a7b9, 1193049, true, 33, 3, 0xdf7c, [4]byte{0x61, 0xfe, 0xf6, 0xc5}},
		{wire.RCAcknowledge, 0x13, 1193049, false, 0, 0, 0x0000, [4]byte{0x29, 0xfc, 0x66, 0xa2}},
	},
	"rxe-ack.pcap": {
		{wire.RCSendOnly, 0x14, 0x00abcd, true, 64, 0, 0x0000, [4]byte{0xb1, 0xfb, 0xda, 0xba}}, // ours, accepted by rxe
		{wire.RCAcknowledge, 0xdef, 0x00abcd, false, 0, 0, 0xa35b, [4]byte{0x5f, 0x08, 0xd1, 0x68}},
		{wire.RCSendOnly, 0xdef, 0xc86b49, true, 64, 0, 0xa35c, [4]byte{0xb8, 0xb2, 0x78, 0x68}},
		{wire.RCSendOnly, 0xdef, 0xc86b49, true, 64, 0, 0xa361, [4]byte{0x5f, 0xd7, 0x7c, 0xc3}},
		{wire.RCSendOnly, 0xdef, 0xc86b49, true, 64, 0, 0xa36f, [4]byte{0x04, 0xce, 0x5d, 0x57}},
	},
}

// rxeHeaders holds, for the captures whose AETHs are not all an ACK with
// MSN 1 or that carry an IETH, those headers frame by frame.
var rxeHeaders = map[string][]struct {
	aeth wire.AETHFields
	ieth uint32
}{
	"rxe-mw-rxe-bound.pcap": {
		{}, {aeth: wire.AETHFields{Syndrome: 0x1f, MSN: 1}}, {}, {aeth: wire.AETHFields{Syndrome: 0x1f, MSN: 2}},
		{ieth: 0x080001ea}, {aeth: wire.AETHFields{Syndrome: 0x1f, MSN: 3}},
		{}, {aeth: wire.AETHFields{Syndrome: wire.NAKSyndrome(wire.NAKRemoteAccess), MSN: 3}},
	},
	"rxe-mw-goverbs-bound.pcap": {
		{}, {aeth: wire.AETHFields{Syndrome: 0x1f, MSN: 1}}, {}, {aeth: wire.AETHFields{Syndrome: 0x1f, MSN: 2}},
		{ieth: 0x0100010c}, {aeth: wire.AETHFields{Syndrome: 0x1f, MSN: 3}},
		{}, {aeth: wire.AETHFields{Syndrome: wire.NAKSyndrome(wire.NAKRemoteAccess), MSN: 3}},
	},
}

// TestRxeCaptures parses every frame rxe put on the wire and recomputes its
// ICRC over the captured IP and UDP headers.
func TestRxeCaptures(t *testing.T) {
	for name, want := range rxeCaptures {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := pcapread.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want {
				fr, err := r.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i+1, err)
				}
				p := fr.Packet
				if err := p.Validate(); err != nil {
					t.Fatalf("frame %d: %v", i+1, err)
				}
				b := p.BTH()
				if b.Opcode() != w.op || b.DestQP() != w.destQP || b.PSN() != w.psn || b.AckRequest() != w.ackReq ||
					len(p.Payload()) != w.payload || b.PadCount() != w.pad || b.PKey() != 0xffff || b.TransportVersion() != 0 {
					t.Errorf("frame %d: %s", i+1, p)
				}
				if fr.Envelope.IPID != w.ipID || fr.Envelope.FlagsFragment != wire.FlagDontFragment {
					t.Errorf("frame %d: IP ID %#x flags %#x, want %#x with DF", i+1, fr.Envelope.IPID, fr.Envelope.FlagsFragment, w.ipID)
				}
				if got := [4]byte(p[len(p)-4:]); got != w.icrc {
					t.Errorf("frame %d: trailer % x, want % x", i+1, got, w.icrc)
				}
				if err := p.CheckICRC(&fr.Envelope); err != nil {
					t.Errorf("frame %d: %v (computed %#08x)", i+1, err, p.ComputeICRC(&fr.Envelope))
				}
				// What a UDP socket receiver can do without the IP header.
				if id, err := p.CheckICRCAnyIPID(&fr.Envelope); err != nil || id != w.ipID {
					t.Errorf("frame %d: ID recovered from the ICRC %#x, %v; want %#x", i+1, id, err, w.ipID)
				}
				// ibv_ud_pingpong's Q_Key, from the QP the guest tool had.
				if d := p.DETH(); d != nil && (d.QKey() != 0x11111111 || d.SrcQP() != 0x11) {
					t.Errorf("frame %d: DETH %+v, want Q_Key 0x11111111 from QP 0x11", i+1, d.Decode())
				}
				if hs, ok := rxeHeaders[name]; ok {
					if a := p.AETH(); a != nil && a.Decode() != hs[i].aeth {
						t.Errorf("frame %d: AETH %+v, want %+v", i+1, a.Decode(), hs[i].aeth)
					}
					if h := p.IETH(); (h != nil) != (hs[i].ieth != 0) || h != nil && h.RKey() != hs[i].ieth {
						t.Errorf("frame %d: IETH %x, want R_Key %#x", i+1, []byte(h), hs[i].ieth)
					}
				} else if a := p.AETH(); a != nil && (a.Syndrome() != wire.ACKSyndrome(wire.CreditsUnlimited) || a.MSN() != 1) {
					t.Errorf("frame %d: AETH %+v, want ACK 0x1f MSN 1", i+1, a.Decode())
				}
			}
			if _, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("more frames than recorded: %v", err)
			}
		})
	}
}
