package verbs_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestForgedWriteFromAnotherPort is the case of issue 11: a well-formed
// WRITE_ONLY with a correct ICRC and the next PSN, sent to a live QP from
// its peer's IP address but another UDP port (another process on the
// peer's host), is not the peer's. Its bytes must not land, and the real
// WRITE that follows, with the same PSN, must not be taken as a duplicate:
// its bytes land (doc/protocol.md §1.2).
func TestForgedWriteFromAnotherPort(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	const n = 64
	dst := p.B.Buffer(t, n, 0)
	clear(dst.Bytes())
	src := p.A.Buffer(t, n, 0)
	copy(src.Bytes(), bytes.Repeat([]byte("R"), n))

	forger, err := conn.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	b := p.B.Dev.Addr()
	// The first PSN A sends (verbstest's psnA): what B's responder expects.
	const nextPSN = 0xfffff0
	buf := make([]byte, 256)
	pkt, err := wire.NewPacket(buf, 0, &wire.BTHFields{Opcode: wire.RCWriteOnly, PKey: 0xffff,
		DestQP: uint32(p.B.QP.QPN()), PSN: nextPSN, AckRequest: true}, n)
	if err != nil {
		t.Fatal(err)
	}
	pkt.RETH().Encode(&wire.RETHFields{VA: dst.Addr(), RKey: uint32(dst.RKey()), DMALength: n})
	copy(pkt.Payload(), bytes.Repeat([]byte("F"), n))
	pkt.SealICRC(&wire.Envelope{Src: b.Addr(), Dst: b.Addr(), FlagsFragment: wire.FlagDontFragment,
		SrcPort: forger.LocalAddr().Port(), DstPort: b.Port()})

	before := p.B.Dev.Counters()
	if _, err := forger.Send([]conn.Message{{Buf: pkt, Addr: b}}); err != nil {
		t.Fatal(err)
	}
	waitCounter(t, p.B.Dev, verbs.DropWrongSource, before.Get(verbs.DropWrongSource)+1)
	if !bytes.Equal(dst.Bytes(), make([]byte, n)) {
		t.Fatalf("the forged WRITE landed: %q", dst.Bytes())
	}

	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
		t.Fatalf("real WRITE: %v", wc.Status)
	}
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Fatalf("the real WRITE did not land: %q", dst.Bytes())
	}
	after := p.B.Dev.Counters()
	if d := after.Get(verbs.DuplicateRequest) - before.Get(verbs.DuplicateRequest); d != 0 {
		t.Errorf("duplicate_request +%d: the real WRITE was taken as a duplicate", d)
	}
}

// TestBadPKeyCounter: a packet with a P_Key of another partition is
// dropped and counted, in drop_bad_pkey and in the port's bad_pkey_cntr
// (ibv_devinfo -v; the device reports BAD_PKEY_CNTR).
func TestBadPKeyCounter(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	b := p.B.Dev.Addr()
	a := p.A.Dev.Addr()
	pkt, err := wire.NewPacket(make([]byte, 128), 0, &wire.BTHFields{Opcode: wire.RCSendOnly, PKey: 0x8001,
		DestQP: uint32(p.B.QP.QPN()), PSN: 0xfffff0}, 8)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := conn.ListenUDP(netip.AddrPortFrom(a.Addr(), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	pkt.SealICRC(&wire.Envelope{Src: a.Addr(), Dst: b.Addr(), FlagsFragment: wire.FlagDontFragment,
		SrcPort: forger.LocalAddr().Port(), DstPort: b.Port()})
	// From another port than A's: the P_Key is checked before the source
	// (doc/protocol.md §1.4), so it is the P_Key that counts.
	if _, err := forger.Send([]conn.Message{{Buf: pkt, Addr: b}}); err != nil {
		t.Fatal(err)
	}
	waitCounter(t, p.B.Dev, verbs.DropBadPKey, 1)
	if port, _ := p.B.Dev.QueryPort(1); port.BadPKeyCntr != 1 {
		t.Errorf("bad_pkey_cntr %d, want 1", port.BadPKeyCntr)
	}
}

// TestTransferUnderForgedFlood: issue 11 saw a flood of forged WRITE_ONLYs
// with random PSNs, from the peer's IP but another port, fail a 64 MiB
// transfer with RETRY_EXC_ERR. Now they are dropped as from a wrong
// source: a 16 MiB WRITE under such a flood completes and its bytes land.
func TestTransferUnderForgedFlood(t *testing.T) {
	const size = 16 << 20
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	src, dst := p.A.Buffer(t, size, 0x3c), p.B.Buffer(t, size, 0)
	clear(dst.Bytes())
	f := newFlooder(t, floodForgedPeer, p.B.Dev.Addr(), p.B.QP.QPN(), dst.Addr(), dst.RKey())
	f.on.Store(true)
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, size)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]
	f.on.Store(false)
	if wc.Status != verbs.WCSuccess {
		t.Fatalf("16 MiB WRITE under a forged flood: %v", wc.Status)
	}
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Fatal("the WRITE's bytes did not all land")
	}
	if f.sent.Load() == 0 || p.B.Dev.Counters().Get(verbs.DropWrongSource) == 0 {
		t.Errorf("the flood did not reach the device (%d sent)", f.sent.Load())
	}
}
