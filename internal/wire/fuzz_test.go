package wire

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzPacket feeds arbitrary bytes to the packet view. Whatever Validate
// accepts must be readable through every accessor without panicking, must
// re-encode from its parsed fields to the same fields and payload, and must
// pass the ICRC check once sealed. The seeds are valid packets of every
// opcode and the reference vectors; testdata/fuzz/FuzzPacket keeps inputs the
// fuzzer found as regression seeds.
func FuzzPacket(f *testing.F) {
	buf := make([]byte, 2048)
	for _, op := range allOpcodes() {
		for _, n := range []int{0, 1, 7, 256} {
			p, err := newSample(op, n).build(buf, &testEnvelope)
			if err != nil {
				f.Fatal(err)
			}
			f.Add([]byte(p))
		}
	}
	for _, v := range []string{vectorCNP, vectorUCSend, vectorRCSend, vectorRCACK} {
		_, p := splitIPv4(f, unhex(f, v))
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := Packet(data)
		if err := p.Validate(); err != nil {
			// The ICRC check must be safe on rejected bytes too.
			if icrc := p.CheckICRC(&testEnvelope); errors.Is(err, ErrTooShort) && !errors.Is(icrc, ErrTooShort) {
				t.Fatalf("CheckICRC on a too-short packet: %v", icrc)
			}
			return
		}
		info := p.Info()
		payload := p.Payload()
		if got := len(payload) + p.BTH().PadCount() + info.HeaderLen + ICRCSize; got != len(p) {
			t.Fatalf("lengths do not add up: %d != %d", got, len(p))
		}
		if len(payload) > 0 && !info.Is(OpPayload) {
			t.Fatalf("%v: payload on a no-payload opcode", p.Opcode())
		}

		s := &sample{bth: p.BTH().Decode(), payload: append([]byte(nil), payload...)}
		if h := p.RETH(); h != nil {
			s.reth = h.Decode()
		}
		if h := p.AETH(); h != nil {
			s.aeth = h.Decode()
		}
		if h := p.AtomicETH(); h != nil {
			s.atomic = h.Decode()
		}
		if h := p.AtomicAckETH(); h != nil {
			s.ack = h.Decode()
		}
		if h := p.ImmDt(); h != nil {
			s.imm = h.Decode()
		}
		if h := p.IETH(); h != nil {
			s.ieth = h.Decode()
		}
		if h := p.DETH(); h != nil {
			s.deth = h.Decode()
		}
		if h := p.FETH(); h != nil {
			s.feth = h.Decode()
		}
		if !info.Is(OpPayload) {
			s.payload = nil
		}
		q, err := s.build(make([]byte, len(p)), &testEnvelope)
		if err != nil {
			t.Fatalf("re-encoding %v: %v", p.Opcode(), err)
		}
		if len(q) != len(p) {
			t.Fatalf("re-encoded length %d, parsed %d", len(q), len(p))
		}
		s.check(t, q)
		if !bytes.Equal(q.Payload(), payload) {
			t.Fatal("payload changed in re-encoding")
		}
		if err := q.CheckICRC(&testEnvelope); err != nil {
			t.Fatal(err)
		}
	})
}
