package engine

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// fuzzRig is a device with one QP — RC unless made by newFuzzRigType —
// connected to (UD: reachable by) a raw bind the fuzzer sends packets
// from.
type fuzzRig struct {
	typ    ib.QPType
	dev    *Device
	qp     *QP
	peer   conn.Bind
	net    *memconn.Network
	env    wire.Envelope // of packets from the peer
	region []byte        // registered middle of mem
	mem    []byte        // guard bytes around region
	key    mem.Key
	cq     *CQ
	mtu    ib.MTU // the path MTU connect sets: the device's active MTU
}

const (
	fuzzPeerQPN = 0x99
	fuzzQKey    = 0x11111111 // a UD rig's Q_Key
)

// rigTweak changes the device's configuration or the QP's capacities of a
// rig before they are created.
type rigTweak func(*DeviceConfig, *QPCap)

func newFuzzRig(tb testing.TB, tweaks ...rigTweak) *fuzzRig {
	return newFuzzRigType(tb, ib.QPTypeRC, tweaks...)
}

func newFuzzRigType(tb testing.TB, typ ib.QPType, tweaks ...rigTweak) *fuzzRig {
	net := memconn.NewNetwork(memconn.Options{})
	a, err := net.Listen(netip.MustParseAddrPort("10.0.0.1:4791"))
	if err != nil {
		tb.Fatal(err)
	}
	b, err := net.Listen(netip.MustParseAddrPort("10.0.0.2:4791"))
	if err != nil {
		tb.Fatal(err)
	}
	cfg, qpCap := DeviceConfig{Bind: a, ActiveMTU: ib.MTU256}, QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2}
	for _, tw := range tweaks {
		tw(&cfg, &qpCap)
	}
	d, err := NewDevice(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close(); b.Close() })
	cq, _ := d.CreateCQ(64)
	qp, err := d.CreateQP(1, &QPInitAttr{Type: typ, SendCQ: cq, RecvCQ: cq, Cap: qpCap})
	if err != nil {
		tb.Fatal(err)
	}
	r := &fuzzRig{typ: typ, dev: d, qp: qp, peer: b, cq: cq, net: net, mem: make([]byte, 3*1024), mtu: cfg.ActiveMTU}
	r.region = r.mem[1024:2048]
	reg, err := d.MRs().Register(1, r.region, ib.AccessLocalWrite|ib.AccessRemoteWrite|ib.AccessRemoteRead|ib.AccessRemoteAtomic)
	if err != nil {
		tb.Fatal(err)
	}
	r.key = reg.Key()
	r.env = wire.Envelope{Src: netip.MustParseAddr("10.0.0.2"), Dst: netip.MustParseAddr("10.0.0.1"),
		FlagsFragment: wire.FlagDontFragment, SrcPort: 4791, DstPort: 4791}
	r.connect(tb)
	return r
}

// rigStep is one modify of a rig's QP.
type rigStep struct {
	a QPAttr
	m ib.QPAttrMask
}

// steps are the modifies that take the rig's QP, of its type, from any
// state to RTS towards the raw peer, expecting PSN 0.
func (r *fuzzRig) steps() []rigStep {
	return map[ib.QPType][]rigStep{
		ib.QPTypeRC: {
			{QPAttr{State: ib.QPStateReset}, ib.QPAttrState},
			{QPAttr{State: ib.QPStateInit, PortNum: 1, AccessFlags: ib.AccessLocalWrite | ib.AccessRemoteWrite | ib.AccessRemoteRead | ib.AccessRemoteAtomic},
				ib.QPAttrState | ib.QPAttrPKeyIndex | ib.QPAttrPort | ib.QPAttrAccessFlags},
			{QPAttr{State: ib.QPStateRTR, PathMTU: r.mtu, DestQPN: fuzzPeerQPN, MaxDestRdAtomic: 4, MinRNRTimer: 1,
				AH: AHAttr{IsGlobal: true, DGID: ib.GIDFromAddr(r.env.Src)}},
				ib.QPAttrState | ib.QPAttrAV | ib.QPAttrPathMTU | ib.QPAttrDestQPN | ib.QPAttrRQPSN | ib.QPAttrMaxDestRdAtomic | ib.QPAttrMinRNRTimer},
			{QPAttr{State: ib.QPStateRTS, Timeout: 1, RetryCnt: 1, RNRRetry: 1, MaxRdAtomic: 4},
				ib.QPAttrState | ib.QPAttrSQPSN | ib.QPAttrTimeout | ib.QPAttrRetryCnt | ib.QPAttrRNRRetry | ib.QPAttrMaxQPRdAtomic},
		},
		ib.QPTypeUC: {
			{QPAttr{State: ib.QPStateReset}, ib.QPAttrState},
			{QPAttr{State: ib.QPStateInit, PortNum: 1, AccessFlags: ib.AccessLocalWrite | ib.AccessRemoteWrite},
				ib.QPAttrState | ib.QPAttrPKeyIndex | ib.QPAttrPort | ib.QPAttrAccessFlags},
			{QPAttr{State: ib.QPStateRTR, PathMTU: r.mtu, DestQPN: fuzzPeerQPN,
				AH: AHAttr{IsGlobal: true, DGID: ib.GIDFromAddr(r.env.Src)}},
				ib.QPAttrState | ib.QPAttrAV | ib.QPAttrPathMTU | ib.QPAttrDestQPN | ib.QPAttrRQPSN},
			{QPAttr{State: ib.QPStateRTS}, ib.QPAttrState | ib.QPAttrSQPSN},
		},
		ib.QPTypeUD: {
			{QPAttr{State: ib.QPStateReset}, ib.QPAttrState},
			{QPAttr{State: ib.QPStateInit, PortNum: 1, QKey: fuzzQKey}, ib.QPAttrState | ib.QPAttrPKeyIndex | ib.QPAttrPort | ib.QPAttrQKey},
			{QPAttr{State: ib.QPStateRTR}, ib.QPAttrState},
			{QPAttr{State: ib.QPStateRTS}, ib.QPAttrState | ib.QPAttrSQPSN},
		},
	}[r.typ]
}

// connect (re)connects the QP to the raw peer, expecting PSN 0, and posts
// a receive of 512 bytes.
func (r *fuzzRig) connect(tb testing.TB) {
	qp := r.qp
	for _, s := range r.steps() {
		if err := qp.Modify(&s.a, s.m); err != nil {
			tb.Fatal(err)
		}
	}
	rw := &RecvWR{SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 512, LKey: ib.LKey(r.key)}}}
	if _, err := qp.PostRecv(rw); err != nil {
		tb.Fatal(err)
	}
}

// inject seals data as a packet to the QP and waits until the device has
// handled it (accepted or dropped).
func (r *fuzzRig) inject(tb testing.TB, data []byte) {
	p := wire.Packet(data)
	if len(p) >= wire.BTHSize+wire.ICRCSize {
		p.BTH().SetDestQP(uint32(r.qp.qpn))
		p.SealICRC(&r.env)
	}
	r.send(tb, r.peer, p)
}

// send hands raw bytes to the device from bind b and waits until the
// device has accepted or dropped them.
func (r *fuzzRig) send(tb testing.TB, b conn.Bind, p []byte) {
	seen := func() uint64 {
		c := r.dev.Counters()
		return c.Get(RcvdPkts) + c.Drops()
	}
	before := seen()
	if _, err := b.Send([]conn.Message{{Buf: p, Addr: netip.AddrPortFrom(r.env.Dst, 4791)}}); err != nil {
		tb.Fatal(err)
	}
	// A packet is counted before it is queued for its QP; a sentinel for
	// an unknown QP sent after it is counted after that, so once the
	// sentinel's drop shows, the QP's inbound ring empty and its task idle
	// mean p's turn is over.
	unknown := func() uint64 { return r.dev.Counters().Get(DropUnknownQP) }
	dropped := unknown()
	sentinel := make(wire.Packet, wire.BTHSize+wire.ICRCSize)
	sentinel.BTH().SetOpcode(wire.RCSendOnly)
	sentinel.BTH().SetPKey(0xffff)
	sentinel.BTH().SetDestQP(r.qp.qpn ^ 0x800000)
	sentinel.SealICRC(&r.env)
	if _, err := b.Send([]conn.Message{{Buf: sentinel, Addr: netip.AddrPortFrom(r.env.Dst, 4791)}}); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); seen() < before+2 || unknown() == dropped || r.qp.inbound.Len() != 0 || r.qp.task.state.Load() != taskIdle; {
		if time.Now().After(deadline) {
			tb.Fatal("device did not handle the packet")
		}
		time.Sleep(10 * time.Microsecond)
	}
	// Let the QP's turn finish before looking at memory.
	r.qp.mu.Lock()
	r.qp.mu.Unlock()
}

// seeder builds a rig's seed packets: add appends one, with AckReq for
// RC, and reth fills a RETH naming bytes of the rig's region.
type seeder struct {
	r     *fuzzRig
	seeds [][]byte
}

func (s *seeder) add(op wire.Opcode, psn wire.PSN, n int, fill func(p wire.Packet)) {
	f := wire.BTHFields{Opcode: op, PKey: 0xffff, PSN: psn, AckRequest: s.r.typ == ib.QPTypeRC}
	p, _ := wire.NewPacket(make([]byte, 512), 0, &f, n)
	if fill != nil {
		fill(p)
	}
	s.seeds = append(s.seeds, append([]byte(nil), p...))
}

func (s *seeder) reth(off uint64, n uint32) func(wire.Packet) {
	return func(p wire.Packet) {
		p.RETH().Encode(&wire.RETHFields{VA: mem.AddrOf(s.r.region) + off, RKey: uint32(s.r.key), DMALength: n})
	}
}

func fuzzSeeds(r *fuzzRig) [][]byte {
	va := mem.AddrOf(r.region)
	sd := &seeder{r: r}
	add, reth := sd.add, sd.reth
	add(wire.RCSendOnly, 0, 16, nil)
	add(wire.RCSendFirst, 0, 256, nil)
	add(wire.RCWriteOnly, 0, 32, reth(8, 32))
	add(wire.RCWriteFirst, 0, 256, reth(0, 600))
	add(wire.RCWriteOnlyWithImmediate, 0, 4, reth(1020, 4))
	add(wire.RCReadRequest, 0, 0, reth(100, 700))
	add(wire.RCCompareSwap, 0, 0, func(p wire.Packet) {
		p.AtomicETH().Encode(&wire.AtomicETHFields{VA: va + 64, RKey: uint32(r.key), SwapAdd: 1, Compare: 0})
	})
	add(wire.RCFetchAdd, 5, 0, func(p wire.Packet) {
		p.AtomicETH().Encode(&wire.AtomicETHFields{VA: va + 1016, RKey: uint32(r.key), SwapAdd: 1})
	})
	add(wire.RCSendOnlyWithInvalidate, 0, 8, func(p wire.Packet) { p.IETH().SetRKey(uint32(r.key)) })
	add(wire.RCAcknowledge, 0, 0, func(p wire.Packet) { p.AETH().SetSyndrome(wire.NAKSyndrome(wire.NAKRemoteAccess)) })
	add(wire.RCReadResponseOnly, 0, 8, func(p wire.Packet) { p.AETH().SetSyndrome(0x1f) })
	add(wire.RCAtomicAcknowledge, 0, 0, nil)
	return sd.seeds
}

// unackedSeeds are UC and UD packets for a rig of that type: SENDs and
// WRITEs, whole and in pieces, with the rig's Q_Key.
func unackedSeeds(r *fuzzRig) [][]byte {
	sd := &seeder{r: r}
	add, reth := sd.add, sd.reth
	deth := func(p wire.Packet) { p.DETH().Encode(&wire.DETHFields{QKey: fuzzQKey, SrcQP: fuzzPeerQPN}) }
	if r.typ == ib.QPTypeUD {
		add(wire.UDSendOnly, 0, 40, deth)
		add(wire.UDSendOnlyWithImmediate, 7, 300, deth)
		add(wire.UDSendOnly, 1, 480, deth)
		return sd.seeds
	}
	add(wire.UCSendOnly, 0, 16, nil)
	add(wire.UCSendFirst, 0, 256, nil)
	add(wire.UCSendMiddle, 1, 256, nil)
	add(wire.UCSendLastWithImmediate, 2, 10, nil)
	add(wire.UCWriteOnly, 0, 32, reth(8, 32))
	add(wire.UCWriteFirst, 0, 256, reth(0, 600))
	add(wire.UCWriteLast, 2, 88, nil)
	add(wire.UCWriteOnlyWithImmediate, 5, 4, reth(1020, 4))
	return sd.seeds
}

// FuzzReceivePathUnacked is FuzzReceivePath for UC and UD QPs: the first
// byte picks the rig, the rest is the packet.
func FuzzReceivePathUnacked(f *testing.F) {
	rigs := []*fuzzRig{newFuzzRigType(f, ib.QPTypeUC), newFuzzRigType(f, ib.QPTypeUD)}
	for i, r := range rigs {
		for _, s := range unackedSeeds(r) {
			f.Add(append([]byte{byte(i)}, s...))
		}
	}
	guards := make([][]byte, len(rigs))
	for i, r := range rigs {
		guards[i] = append([]byte(nil), r.mem[:1024]...)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 || len(data) > pktBufSize+1 {
			return
		}
		i := int(data[0]) % len(rigs)
		r := rigs[i]
		if st := r.qp.State(); st != ib.QPStateRTS {
			r.connect(t)
		}
		r.inject(t, append([]byte(nil), data[1:]...))
		if !bytes.Equal(r.mem[:1024], guards[i]) || !bytes.Equal(r.mem[2048:], guards[i]) {
			t.Fatal("bytes outside the registered region changed")
		}
		wcs := make([]WC, 64)
		if n, _ := r.cq.Poll(wcs); n > 0 && r.qp.rq.Len() == 0 {
			if _, err := r.qp.PostRecv(&RecvWR{SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 512, LKey: ib.LKey(r.key)}}}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzReceivePath drives arbitrary transport packets with valid ICRCs
// through a live device and QP. Nothing may panic, and the bytes around the
// registered region must never change.
func FuzzReceivePath(f *testing.F) {
	r := newFuzzRig(f)
	for _, s := range fuzzSeeds(r) {
		f.Add(s)
	}
	guard := append([]byte(nil), r.mem[:1024]...)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > pktBufSize {
			return // the link drops what does not fit the device's buffers
		}
		if r.qp.State() != ib.QPStateRTS {
			r.connect(t)
		}
		r.inject(t, append([]byte(nil), data...))
		if !bytes.Equal(r.mem[:1024], guard) || !bytes.Equal(r.mem[2048:], guard) {
			t.Fatal("bytes outside the registered region changed")
		}
		wcs := make([]WC, 64)
		r.cq.Poll(wcs) // keep the CQ from overflowing
	})
}
