package wire

import (
	"bytes"
	"testing"
)

// Each header is encoded from fields and compared with bytes typed from the
// spec's diagram, then decoded back and accessed field by field.

func TestBTHLayout(t *testing.T) {
	f := BTHFields{Opcode: RCWriteFirst, SolicitedEvent: true, MigReq: true, PadCount: 2, TransportVersion: 0xf,
		PKey: 0x8001, FECN: true, BECN: true, DestQP: 0x123456, AckRequest: true, PSN: 0xabcdef}
	want := unhex(t, "06 ef 8001 c0 123456 80 abcdef")
	b := make(BTH, BTHSize)
	b.Encode(&f)
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded % x, want % x", []byte(b), want)
	}
	if got := b.Decode(); got != f {
		t.Errorf("decoded %+v, want %+v", got, f)
	}
	// Setters touch only their own bits.
	b.SetSolicitedEvent(false)
	b.SetMigReq(false)
	b.SetPadCount(0)
	b.SetTransportVersion(0)
	b.SetFECN(false)
	b.SetBECN(false)
	b.SetAckRequest(false)
	b.SetDestQP(0xff000001) // high bits dropped
	b.SetPSN(0x1000002)
	b.SetPKey(0xffff)
	b.SetOpcode(RCSendOnly)
	if want := unhex(t, "04 00 ffff 00 000001 00 000002"); !bytes.Equal(b, want) {
		t.Errorf("after setters % x, want % x", []byte(b), want)
	}
}

func TestExtendedHeaderLayouts(t *testing.T) {
	t.Run("RETH", func(t *testing.T) {
		f := RETHFields{VA: 0x0102030405060708, RKey: 0x090a0b0c, DMALength: 0x0d0e0f10}
		b := make(RETH, RETHSize)
		b.Encode(&f)
		expect(t, b, "0102030405060708 090a0b0c 0d0e0f10")
		if b.Decode() != f || b.VA() != f.VA || b.RKey() != f.RKey || b.DMALength() != f.DMALength {
			t.Errorf("decoded %+v", b.Decode())
		}
	})
	t.Run("AETH", func(t *testing.T) {
		f := AETHFields{Syndrome: RNRNAKSyndrome(12), MSN: 0x0a0b0c}
		b := make(AETH, AETHSize)
		b.Encode(&f)
		expect(t, b, "2c 0a0b0c")
		if b.Decode() != f {
			t.Errorf("decoded %+v", b.Decode())
		}
	})
	t.Run("AtomicETH", func(t *testing.T) {
		f := AtomicETHFields{VA: 0x1011121314151617, RKey: 0x18191a1b, SwapAdd: 0x2021222324252627, Compare: 0x3031323334353637}
		b := make(AtomicETH, AtomicETHSize)
		b.Encode(&f)
		expect(t, b, "1011121314151617 18191a1b 2021222324252627 3031323334353637")
		if b.Decode() != f {
			t.Errorf("decoded %+v", b.Decode())
		}
	})
	t.Run("AtomicAckETH", func(t *testing.T) {
		f := AtomicAckETHFields{OrigData: 0xfffefdfcfbfaf9f8}
		b := make(AtomicAckETH, AtomicAckETHSize)
		b.Encode(&f)
		expect(t, b, "fffefdfcfbfaf9f8")
		if b.Decode() != f {
			t.Errorf("decoded %+v", b.Decode())
		}
	})
	t.Run("ImmDt", func(t *testing.T) {
		b := make(ImmDt, ImmDtSize)
		b.Encode(&ImmDtFields{Imm: 0xc0ffee01})
		expect(t, b, "c0ffee01")
		if b.Imm() != 0xc0ffee01 {
			t.Errorf("Imm %#x", b.Imm())
		}
	})
	t.Run("IETH", func(t *testing.T) {
		b := make(IETH, IETHSize)
		b.Encode(&IETHFields{RKey: 0x00abcd12})
		expect(t, b, "00abcd12")
		if b.Decode().RKey != 0x00abcd12 {
			t.Errorf("RKey %#x", b.RKey())
		}
	})
	t.Run("DETH", func(t *testing.T) {
		b := DETH(unhex(t, "ffffffff ff ffffff"))
		b.Encode(&DETHFields{QKey: 0x80010000, SrcQP: 0x01000011}) // high QPN bits dropped
		expect(t, b, "80010000 00 000011")
		if got := b.Decode(); got != (DETHFields{QKey: 0x80010000, SrcQP: 0x11}) {
			t.Errorf("decoded %+v", got)
		}
	})
	t.Run("FETH", func(t *testing.T) {
		b := make(FETH, FETHSize)
		b.Encode(&FETHFields{PlacementType: 2, Selectivity: 1})
		expect(t, b, "00000012")
		if got := b.Decode(); got != (FETHFields{PlacementType: 2, Selectivity: 1}) {
			t.Errorf("decoded %+v", got)
		}
	})
}

func expect(t *testing.T, got []byte, wantHex string) {
	t.Helper()
	if want := unhex(t, wantHex); !bytes.Equal(got, want) {
		t.Errorf("encoded % x, want % x", got, want)
	}
}
