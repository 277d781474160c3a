package wire

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

var testEnvelope = Envelope{
	Src:           netip.MustParseAddr("192.168.1.1"),
	Dst:           netip.MustParseAddr("192.168.1.2"),
	FlagsFragment: FlagDontFragment,
	SrcPort:       0xdf94,
	DstPort:       UDPPort,
}

func TestParseRCSendVector(t *testing.T) {
	_, p := splitIPv4(t, unhex(t, vectorRCSend))
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := BTHFields{Opcode: RCSendOnly, PadCount: 3, PKey: 0xffff, DestQP: 0x12, AckRequest: true, PSN: 0}
	if got := p.BTH().Decode(); got != want {
		t.Errorf("BTH = %+v, want %+v", got, want)
	}
	if got := string(p.Payload()); got != "hello" {
		t.Errorf("payload %q", got)
	}
	if p.RETH() != nil || p.AETH() != nil || p.ImmDt() != nil {
		t.Error("SEND_ONLY reports extended headers it does not carry")
	}
}

func TestParseRCACKVector(t *testing.T) {
	_, p := splitIPv4(t, unhex(t, vectorRCACK))
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b := p.BTH()
	if b.Opcode() != RCAcknowledge || b.DestQP() != 0x11 || b.PSN() != 0 || b.AckRequest() {
		t.Errorf("BTH = %+v", b.Decode())
	}
	a := p.AETH().Decode()
	if a.Syndrome != ACKSyndrome(CreditsUnlimited) || a.MSN != 1 || a.Syndrome.Type() != SyndromeACK {
		t.Errorf("AETH = %+v", a)
	}
	if len(p.Payload()) != 0 {
		t.Errorf("ACK payload %d bytes", len(p.Payload()))
	}
}

func TestParseUCSendVector(t *testing.T) {
	_, p := splitIPv4(t, unhex(t, vectorUCSend))
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b := p.BTH()
	if b.Opcode() != UCSendOnly || !b.MigReq() || b.PadCount() != 2 || b.DestQP() != 211 || b.PSN() != 13571856 {
		t.Errorf("BTH = %+v", b.Decode())
	}
	if n := len(p.Payload()); n != 18 {
		t.Errorf("payload %d bytes, want 18", n)
	}
}

// TestBuildMatchesVectors builds Example C in place and compares every byte.
func TestBuildMatchesVectors(t *testing.T) {
	const headroom = 28 // room for IPv4+UDP in front
	buf := make([]byte, 256)

	p, err := NewPacket(buf, headroom, &BTHFields{Opcode: RCSendOnly, PKey: 0xffff, DestQP: 0x12, AckRequest: true}, 5)
	if err != nil {
		t.Fatal(err)
	}
	copy(p.Payload(), "hello")
	p.SealICRC(&testEnvelope)
	_, want := splitIPv4(t, unhex(t, vectorRCSend))
	if !bytes.Equal(p, want) {
		t.Errorf("SEND:\n got % x\nwant % x", []byte(p), []byte(want))
	}
	if &p[0] != &buf[headroom] {
		t.Error("packet not built in place after the headroom")
	}

	ack := Envelope{Src: testEnvelope.Dst, Dst: testEnvelope.Src, FlagsFragment: FlagDontFragment, SrcPort: 0xf806, DstPort: UDPPort}
	p, err = NewPacket(buf, 0, &BTHFields{Opcode: RCAcknowledge, PKey: 0xffff, DestQP: 0x11}, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.AETH().Encode(&AETHFields{Syndrome: ACKSyndrome(CreditsUnlimited), MSN: 1})
	p.SealICRC(&ack)
	_, want = splitIPv4(t, unhex(t, vectorRCACK))
	if !bytes.Equal(p, want) {
		t.Errorf("ACK:\n got % x\nwant % x", []byte(p), []byte(want))
	}
}

// sample is a packet of one opcode with every field set to a distinct value.
type sample struct {
	bth     BTHFields
	reth    RETHFields
	aeth    AETHFields
	atomic  AtomicETHFields
	ack     AtomicAckETHFields
	imm     ImmDtFields
	ieth    IETHFields
	deth    DETHFields
	feth    FETHFields
	payload []byte
}

func newSample(op Opcode, payloadLen int) *sample {
	s := &sample{
		bth: BTHFields{Opcode: op, SolicitedEvent: true, PKey: 0xffff, DestQP: 0xabcdef,
			AckRequest: true, PSN: 0xfedcba},
		reth:   RETHFields{VA: 0x1122334455667788, RKey: 0x99aabbcc, DMALength: 0x10000},
		aeth:   AETHFields{Syndrome: NAKSyndrome(NAKRemoteAccess), MSN: 0x123456},
		atomic: AtomicETHFields{VA: 0x7ffe00001000, RKey: 0x1234, SwapAdd: 0x0102030405060708, Compare: 0x1112131415161718},
		ack:    AtomicAckETHFields{OrigData: 0xdeadbeefcafef00d},
		imm:    ImmDtFields{Imm: 0xa1b2c3d4},
		ieth:   IETHFields{RKey: 0x5566},
		deth:   DETHFields{QKey: 0x11111111, SrcQP: 0x000017},
		feth:   FETHFields{PlacementType: 2, Selectivity: 1},
	}
	if op.Info().Is(OpPayload) {
		s.payload = make([]byte, payloadLen)
		for i := range s.payload {
			s.payload[i] = byte(i*7 + 3)
		}
	}
	return s
}

// build writes s into buf and seals it for e.
func (s *sample) build(buf []byte, e *Envelope) (Packet, error) {
	p, err := NewPacket(buf, 0, &s.bth, len(s.payload))
	if err != nil {
		return nil, err
	}
	if h := p.RETH(); h != nil {
		h.Encode(&s.reth)
	}
	if h := p.AETH(); h != nil {
		h.Encode(&s.aeth)
	}
	if h := p.AtomicETH(); h != nil {
		h.Encode(&s.atomic)
	}
	if h := p.AtomicAckETH(); h != nil {
		h.Encode(&s.ack)
	}
	if h := p.ImmDt(); h != nil {
		h.Encode(&s.imm)
	}
	if h := p.IETH(); h != nil {
		h.Encode(&s.ieth)
	}
	if h := p.DETH(); h != nil {
		h.Encode(&s.deth)
	}
	if h := p.FETH(); h != nil {
		h.Encode(&s.feth)
	}
	copy(p.Payload(), s.payload)
	p.SealICRC(e)
	return p, nil
}

// check parses p and compares every field with s.
func (s *sample) check(t *testing.T, p Packet) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := s.bth
	want.PadCount = PadFor(len(s.payload))
	if got := p.BTH().Decode(); got != want {
		t.Errorf("BTH %+v, want %+v", got, want)
	}
	info := p.Info()
	eq := func(h Header, present bool, same bool) {
		if present != info.Headers.Has(h) {
			t.Errorf("header %d present %v, table says %v", h, present, info.Headers.Has(h))
		}
		if present && !same {
			t.Errorf("header %d fields differ", h)
		}
	}
	eq(HdrRETH, p.RETH() != nil, p.RETH() == nil || p.RETH().Decode() == s.reth)
	eq(HdrAETH, p.AETH() != nil, p.AETH() == nil || p.AETH().Decode() == s.aeth)
	eq(HdrAtomicETH, p.AtomicETH() != nil, p.AtomicETH() == nil || p.AtomicETH().Decode() == s.atomic)
	eq(HdrAtomicAckETH, p.AtomicAckETH() != nil, p.AtomicAckETH() == nil || p.AtomicAckETH().Decode() == s.ack)
	eq(HdrImmDt, p.ImmDt() != nil, p.ImmDt() == nil || p.ImmDt().Decode() == s.imm)
	eq(HdrIETH, p.IETH() != nil, p.IETH() == nil || p.IETH().Decode() == s.ieth)
	eq(HdrDETH, p.DETH() != nil, p.DETH() == nil || p.DETH().Decode() == s.deth)
	eq(HdrFETH, p.FETH() != nil, p.FETH() == nil || p.FETH().Decode() == s.feth)
	if !bytes.Equal(p.Payload(), s.payload) {
		t.Errorf("payload % x, want % x", p.Payload(), s.payload)
	}
}

func allOpcodes() []Opcode {
	var ops []Opcode
	for op := range 256 {
		if Opcode(op).Info().Valid() {
			ops = append(ops, Opcode(op))
		}
	}
	return ops
}

func TestRoundTripEveryOpcode(t *testing.T) {
	buf := make([]byte, 2048)
	for _, op := range allOpcodes() {
		for _, n := range []int{0, 1, 2, 3, 4, 5, 1024} {
			s := newSample(op, n)
			p, err := s.build(buf, &testEnvelope)
			if err != nil {
				t.Fatalf("%v/%d: %v", op, n, err)
			}
			if got, want := len(p), PacketLen(op, len(s.payload)); got != want {
				t.Errorf("%v/%d: built %d bytes, PacketLen says %d", op, n, got, want)
			}
			if len(p)%4 != 0 {
				t.Errorf("%v/%d: length %d not a multiple of 4", op, n, len(p))
			}
			s.check(t, p)
			if err := p.CheckICRC(&testEnvelope); err != nil {
				t.Errorf("%v/%d: %v", op, n, err)
			}
		}
	}
}

// TestTruncatedPrefixes cuts every valid packet at every length: each prefix
// must be rejected by Validate or, where its shape is still legal, by the
// ICRC; nothing may panic.
func TestTruncatedPrefixes(t *testing.T) {
	buf := make([]byte, 256)
	for _, op := range allOpcodes() {
		p, err := newSample(op, 13).build(buf, &testEnvelope)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(p) {
			q := Packet(append([]byte(nil), p[:n]...))
			if q.Validate() == nil && q.CheckICRC(&testEnvelope) == nil {
				t.Errorf("%v: prefix of %d/%d bytes accepted", op, n, len(p))
			}
		}
	}
}

func TestValidateErrors(t *testing.T) {
	buf := make([]byte, 256)
	good := func(op Opcode, n int) Packet {
		p, err := newSample(op, n).build(buf, &testEnvelope)
		if err != nil {
			t.Fatal(err)
		}
		return append(Packet(nil), p...)
	}
	for _, tc := range []struct {
		name string
		pkt  func() Packet
		want error
	}{
		{"empty", func() Packet { return nil }, ErrTooShort},
		{"BTH only", func() Packet { return good(RCSendOnly, 0)[:BTHSize] }, ErrTooShort},
		{"reserved opcode", func() Packet { p := good(RCSendOnly, 0); p[0] = 0x15; return p }, ErrUnknownOpcode},
		{"RD opcode", func() Packet { p := good(RCSendOnly, 0); p[0] = 0x40; return p }, ErrUnknownOpcode},
		{"XRC opcode", func() Packet { p := good(RCSendOnly, 0); p[0] = 0xa4; return p }, ErrUnknownOpcode},
		{"TVer 1", func() Packet { p := good(RCSendOnly, 4); p.BTH().SetTransportVersion(1); return p }, ErrTransportVersion},
		{"RETH cut", func() Packet { return good(RCReadRequest, 0)[:BTHSize+8+ICRCSize] }, ErrTruncated},
		{"atomic cut", func() Packet { return good(RCCompareSwap, 0)[:36] }, ErrTruncated},
		{"ACK with data", func() Packet { return append(good(RCAcknowledge, 0), 0, 0, 0, 0) }, ErrUnexpectedData},
		{"ACK with pad", func() Packet { p := good(RCAcknowledge, 0); p.BTH().SetPadCount(1); return p }, ErrUnexpectedData},
		{"pad > payload", func() Packet { p := good(RCSendOnly, 0); p.BTH().SetPadCount(3); return p }, ErrPad},
		{"unaligned", func() Packet { return append(good(RCSendOnly, 4), 0) }, ErrPad},
	} {
		if err := tc.pkt().Validate(); !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestCheckICRCRejectsCorruption(t *testing.T) {
	buf := make([]byte, 256)
	p, err := newSample(RCWriteFirst, 64).build(buf, &testEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(p) {
		if i == bthECN {
			continue // masked: FECN/BECN may be rewritten in flight
		}
		q := append(Packet(nil), p...)
		q[i] ^= 0x01
		if err := q.CheckICRC(&testEnvelope); !errors.Is(err, ErrBadICRC) {
			t.Errorf("bit flip at byte %d not detected: %v", i, err)
		}
	}
}

func TestNewPacketErrors(t *testing.T) {
	buf := make([]byte, 64)
	for _, tc := range []struct {
		name     string
		op       Opcode
		headroom int
		n        int
		want     error
	}{
		{"unknown opcode", 0x15, 0, 0, ErrUnknownOpcode},
		{"payload on ACK", RCAcknowledge, 0, 4, ErrPayloadLength},
		{"negative payload", RCSendOnly, 0, -1, ErrPayloadLength},
		{"too big", RCSendOnly, 0, 64, ErrBufferTooSmall},
		{"headroom eats it", RCSendOnly, 60, 0, ErrBufferTooSmall},
		{"negative headroom", RCSendOnly, -1, 0, ErrBufferTooSmall},
	} {
		if _, err := NewPacket(buf, tc.headroom, &BTHFields{Opcode: tc.op}, tc.n); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestNewPacketClearsStaleBytes builds over a dirty buffer: reserved header
// bytes, pad and ICRC must not leak old contents.
func TestNewPacketClearsStaleBytes(t *testing.T) {
	buf := bytes.Repeat([]byte{0xee}, 128)
	p, err := NewPacket(buf, 0, &BTHFields{Opcode: UDSendOnly, DestQP: 1}, 5)
	if err != nil {
		t.Fatal(err)
	}
	copy(p.Payload(), "abcde")
	if p[bthECN] != 0 || p[bthAckReq] != 0 {
		t.Error("BTH reserved bits not cleared")
	}
	if d := p.DETH(); d.QKey() != 0 || d[dethResv] != 0 || d.SrcQP() != 0 {
		t.Errorf("DETH not cleared: % x", []byte(d))
	}
	if tail := p[len(p)-ICRCSize-3:]; !bytes.Equal(tail, make([]byte, 7)) {
		t.Errorf("pad and ICRC not cleared: % x", tail)
	}
}
