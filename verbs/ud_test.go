package verbs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

const grh = 40 // the network-header area of a UD receive buffer

// checkGRH checks the 40 bytes a UD receive buffer starts with for a
// datagram from src to dst carrying a transport packet of n bytes: twenty
// zero bytes and the IPv4 header, with the checksum libibverbs verifies
// before it believes the header is IPv4 (ibv_init_ah_from_wc), or the
// IPv6 header.
func checkGRH(tb testing.TB, b []byte, src, dst netip.Addr, n int) {
	tb.Helper()
	be := binary.BigEndian
	if src.Is4() {
		h := b[20:40]
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(be.Uint16(h[i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		switch {
		case !bytes.Equal(b[:20], make([]byte, 20)):
			tb.Errorf("GRH: the first 20 bytes are not zero: % x", b[:20])
		case h[0] != 0x45 || int(be.Uint16(h[2:])) != 20+8+n || be.Uint16(h[6:]) != 0x4000 || h[8] != 64 || h[9] != 17:
			tb.Errorf("GRH: IPv4 header % x, want version 4, length %d, DF, TTL 64, UDP", h, 20+8+n)
		case sum != 0xffff:
			tb.Errorf("GRH: IPv4 header checksum %#04x is wrong", be.Uint16(h[10:]))
		case netip.AddrFrom4([4]byte(h[12:16])) != src || netip.AddrFrom4([4]byte(h[16:20])) != dst:
			tb.Errorf("GRH: addresses %v -> %v, want %v -> %v", h[12:16], h[16:20], src, dst)
		}
		return
	}
	if b[0]>>4 != 6 || int(be.Uint16(b[4:])) != 8+n || b[6] != 17 || b[7] != 64 ||
		netip.AddrFrom16([16]byte(b[8:24])) != src || netip.AddrFrom16([16]byte(b[24:40])) != dst {
		tb.Errorf("GRH: IPv6 header % x, want %v -> %v, payload length %d, UDP, hop limit 64", b[:40], src, dst, 8+n)
	}
}

// udPacketLen is the transport length of a UD SEND of n bytes: BTH, DETH,
// ImmDt, payload, pad, ICRC.
func udPacketLen(n int, imm bool) int {
	l := 12 + 8 + n + (-n & 3) + 4
	if imm {
		l += 4
	}
	return l
}

// TestUDSendRecv sends UD messages up to the MTU over both links: each
// receive buffer starts with the packet's network header, then the
// payload, and the completion carries the GRH flag, the sender's QP and
// a byte count with the 40 bytes.
func TestUDSendRecv(t *testing.T) {
	for _, link := range links {
		p := verbstest.New(t, verbstest.Options{Link: link, Type: verbs.QPTypeUD})
		for _, n := range []int{0, 1, 61, 1024, 4095, 4096} {
			for _, imm := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%d/imm=%v", link, n, imm), func(t *testing.T) {
					src := p.A.Buffer(t, n, 0x6b)
					dst := p.B.Buffer(t, grh+n+5, 0)
					copy(dst.Bytes(), bytes.Repeat([]byte{0xee}, grh+n+5))
					postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 44, SGList: []verbs.SGE{dst.SGE(0, grh+n+5)}})
					wr := &verbs.SendWR{WRID: 4, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)},
						AH: p.A.AH, RemoteQPN: p.A.PeerQPN, RemoteQKey: verbstest.DefaultQKey}
					if imm {
						wr.Opcode, wr.Imm = verbs.WRSendWithImm, 0xfeedf00d
					}
					post(t, p.A.QP, wr)
					expectWC(t, verbstest.MustPoll(t, p.A.SendCQ, 1)[0], verbs.WC{
						WRID: 4, Status: verbs.WCSuccess, Opcode: verbs.WCSend, ByteLen: uint32(n), QPNum: p.A.QP.QPN()})
					want := verbs.WC{WRID: 44, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(grh + n),
						QPNum: p.B.QP.QPN(), SrcQP: p.A.QP.QPN(), Flags: verbs.WCFlagGRH}
					if imm {
						want.Imm, want.Flags = 0xfeedf00d, verbs.WCFlagGRH|verbs.WCFlagWithImm
					}
					expectWC(t, verbstest.MustPoll(t, p.B.RecvCQ, 1)[0], want)
					b := dst.Bytes()
					checkGRH(t, b, p.A.Dev.Addr().Addr(), p.B.Dev.Addr().Addr(), udPacketLen(n, imm))
					if !bytes.Equal(b[grh:grh+n], src.Bytes()[:n]) {
						t.Error("the payload after the GRH differs from the one sent")
					}
					if !bytes.Equal(b[grh+n:], bytes.Repeat([]byte{0xee}, 5)) {
						t.Error("bytes past the message changed")
					}
				})
			}
		}
	}
}

// TestUDGRHIPv6 receives a UD message from a device on an IPv6 address:
// the whole 40 bytes are the IPv6 header.
func TestUDGRHIPv6(t *testing.T) {
	net := memconn.NewNetwork(memconn.Options{})
	var sides [2]*udSide
	for i, a := range []string{"[fd00::1]:4791", "[fd00::2]:4791"} {
		b, err := net.Listen(netip.MustParseAddrPort(a))
		if err != nil {
			t.Fatal(err)
		}
		sides[i] = newUDSide(t, verbs.DeviceConfig{Bind: b}, 0x77)
	}
	a, b := sides[0], sides[1]
	ah := a.ah(t, b)
	src, dst := a.buffer(t, 100), b.buffer(t, grh+100)
	postRecv(t, b.qp, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{dst.SGE(0, grh+100)}})
	post(t, a.qp, &verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{src.SGE(0, 100)}, AH: ah, RemoteQPN: b.qp.QPN(), RemoteQKey: 0x77})
	wc := verbstest.MustPoll(t, b.cq, 1)[0]
	if wc.Status != verbs.WCSuccess || wc.ByteLen != grh+100 || wc.Flags != verbs.WCFlagGRH || wc.SrcQP != a.qp.QPN() {
		t.Fatalf("completion %+v", wc)
	}
	checkGRH(t, dst.Bytes(), a.dev.Addr().Addr(), b.dev.Addr().Addr(), udPacketLen(100, false))
	if !bytes.Equal(dst.Bytes()[grh:], src.Bytes()) {
		t.Error("payload differs")
	}
}

// udSide is a device with one UD QP and one CQ, for tests that build
// their own topology.
type udSide struct {
	dev *verbs.Device
	pd  *verbs.PD
	cq  *verbs.CQ
	qp  *verbs.QP
}

func newUDSide(tb testing.TB, cfg verbs.DeviceConfig, qkey uint32) *udSide {
	tb.Helper()
	d, err := verbs.OpenDevice(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	s := &udSide{dev: d}
	if s.pd, err = d.AllocPD(); err != nil {
		tb.Fatal(err)
	}
	if s.cq, err = d.CreateCQ(64); err != nil {
		tb.Fatal(err)
	}
	if s.qp, err = s.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeUD, SendCQ: s.cq, RecvCQ: s.cq,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16}}); err != nil {
		tb.Fatal(err)
	}
	if err := s.qp.ReadyUD(qkey, 0); err != nil {
		tb.Fatal(err)
	}
	return s
}

func (s *udSide) ah(tb testing.TB, to *udSide) *verbs.AH {
	tb.Helper()
	a := to.qp.Endpoint(0).AHAttr()
	ah, err := s.pd.CreateAH(&a)
	if err != nil {
		tb.Fatal(err)
	}
	return ah
}

func (s *udSide) buffer(tb testing.TB, n int) *verbs.MR {
	tb.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	mr, err := s.pd.RegMR(b, verbs.AccessLocalWrite)
	if err != nil {
		tb.Fatal(err)
	}
	return mr
}

// udSend posts a signaled SEND of n bytes from side A of a UD pair with
// Q_Key qkey and waits for its completion, which must succeed whatever
// the receiver makes of it.
func udSend(tb testing.TB, p *verbstest.Pair, n int, qkey uint32) {
	tb.Helper()
	src := p.A.Buffer(tb, n, 3)
	post(tb, p.A.QP, &verbs.SendWR{WRID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, n)}, AH: p.A.AH, RemoteQPN: p.A.PeerQPN, RemoteQKey: qkey})
	if wc := verbstest.MustPoll(tb, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
		tb.Fatalf("send completion: %v", wc.Status)
	}
}

// expectNoRecv checks that nothing completes on cq for a while, and that
// counter c of dev moved to want.
func expectNoRecv(tb testing.TB, cq *verbs.CQ, dev *verbs.Device, c verbs.Counter, want uint64) {
	tb.Helper()
	waitFor(tb, func() bool { return dev.Counters().Get(c) == want })
	time.Sleep(5 * time.Millisecond)
	if n, _ := cq.Poll(make([]verbs.WC, 1)); n != 0 {
		tb.Fatal("a receive completed")
	}
}

// TestUDQKey sends with a wrong Q_Key (dropped and counted, no
// completion), then with the privileged-Q_Key rule: a WR Q_Key with the
// high bit set sends the QP's own Q_Key.
func TestUDQKey(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			const qkey = 0x80000123 // a privileged Q_Key, given at modify
			p := verbstest.New(t, verbstest.Options{Link: link, Type: verbs.QPTypeUD, QKey: qkey})
			dst := p.B.Buffer(t, grh+16, 0)
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{dst.SGE(0, grh+16)}})
			udSend(t, p, 16, 0x123) // a plain Q_Key that is not B's
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropBadQKey, 1)
			udSend(t, p, 16, 0x80000000) // high bit: A's own, which is B's
			if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || wc.WRID != 1 {
				t.Fatalf("completion %+v", wc)
			}
			a := verbs.QPAttr{QKey: 0x80000999}
			if err := p.A.QP.Modify(&a, verbs.QPAttrQKey); err != nil {
				t.Fatal(err)
			}
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 2, SGList: []verbs.SGE{dst.SGE(0, grh+16)}})
			udSend(t, p, 16, 0x80000123) // high bit: A's own, no longer B's
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropBadQKey, 2)
			if q, _ := p.A.QP.Query(); q.QKey != 0x80000999 {
				t.Errorf("query: QKey %#x", q.QKey)
			}
		})
	}
}

// TestUDTooLong sends a message longer than the MTU (nothing goes out and
// the send completes successfully, IBA C10-93.1.1, counted), and one
// longer than the receive buffer (dropped and counted; the receive WQE
// takes the next message).
func TestUDTooLong(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link, Type: verbs.QPTypeUD})
			dst := p.B.Buffer(t, grh+100, 0)
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 7, SGList: []verbs.SGE{dst.SGE(0, grh+100)}})
			sent := p.A.Dev.Counters().Get(verbs.SentPkts)
			udSend(t, p, 4097, verbstest.DefaultQKey)
			if c := p.A.Dev.Counters(); c.Get(verbs.UDSendTooLong) != 1 || c.Get(verbs.SentPkts) != sent {
				t.Errorf("ud_send_too_long %d, sent_pkts %d -> %d", c.Get(verbs.UDSendTooLong), sent, c.Get(verbs.SentPkts))
			}
			udSend(t, p, 101, verbstest.DefaultQKey)
			expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropInvalidRequest, 1)
			udSend(t, p, 100, verbstest.DefaultQKey)
			if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || wc.WRID != 7 || wc.ByteLen != grh+100 {
				t.Fatalf("completion %+v", wc)
			}
		})
	}
}

// TestUDNoRecv sends to a UD QP with no receive posted: the message is
// dropped and counted, and the next one, with a receive, arrives.
func TestUDNoRecv(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUD})
	udSend(t, p, 10, verbstest.DefaultQKey)
	expectNoRecv(t, p.B.RecvCQ, p.B.Dev, verbs.DropNoRecvWQE, 1)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 3, SGList: []verbs.SGE{p.B.Buffer(t, grh+10, 0).SGE(0, grh+10)}})
	udSend(t, p, 10, verbstest.DefaultQKey)
	if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.Status != verbs.WCSuccess || wc.WRID != 3 {
		t.Fatalf("completion %+v", wc)
	}
}

// TestUDManyDestinations has one UD QP send to two QPs, each work request
// naming its own: the per-WR destination of ibv_send_wr.wr.ud.
func TestUDManyDestinations(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			p := verbstest.New(t, verbstest.Options{Link: link, Type: verbs.QPTypeUD})
			q := p.Another(t, verbstest.Options{Link: link, Type: verbs.QPTypeUD})
			src := p.A.Buffer(t, 32, 9)
			for i, to := range []*verbstest.Side{p.B, q.B} {
				dst := to.Buffer(t, grh+32, 0)
				postRecv(t, to.QP, &verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(0, grh+32)}})
				post(t, p.A.QP, &verbs.SendWR{Opcode: verbs.WRSendWithImm, Imm: uint32(i), SGList: []verbs.SGE{src.SGE(0, 32)},
					AH: p.A.AH, RemoteQPN: to.QP.QPN(), RemoteQKey: verbstest.DefaultQKey})
				wc := verbstest.MustPoll(t, to.RecvCQ, 1)[0]
				if wc.Status != verbs.WCSuccess || wc.Imm != uint32(i) || wc.SrcQP != p.A.QP.QPN() || wc.QPNum != to.QP.QPN() {
					t.Fatalf("destination %d: completion %+v", i, wc)
				}
				if !bytes.Equal(dst.Bytes()[grh:], src.Bytes()) {
					t.Fatalf("destination %d: payload differs", i)
				}
			}
		})
	}
}

// TestUDSRQTooLong: a UD QP on an SRQ completes a receive WQE too short
// for the message with LOC_LEN_ERR (class E), as the WQE was taken from
// the shared queue, and stays usable.
func TestUDSRQTooLong(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUD})
	srq, err := p.B.PD.CreateSRQ(&verbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := p.B.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeUD, SendCQ: p.B.SendCQ, RecvCQ: p.B.RecvCQ, SRQ: srq,
		Cap: verbs.QPCap{MaxSendWR: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.ReadyUD(verbstest.DefaultQKey, 0); err != nil {
		t.Fatal(err)
	}
	dst := p.B.Buffer(t, grh+64, 0)
	for i := range 2 {
		if err := srq.PostRecv(&verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(0, grh+64)}}); err != nil {
			t.Fatal(err)
		}
	}
	src := p.A.Buffer(t, 65, 1)
	for _, n := range []int{65, 64} {
		post(t, p.A.QP, &verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{src.SGE(0, n)}, AH: p.A.AH, RemoteQPN: qp.QPN(),
			RemoteQKey: verbstest.DefaultQKey})
	}
	wcs := verbstest.MustPoll(t, p.B.RecvCQ, 2)
	if wcs[0].WRID != 0 || wcs[0].Status != verbs.WCLocLenErr || wcs[1].WRID != 1 || wcs[1].Status != verbs.WCSuccess || wcs[1].ByteLen != grh+64 {
		t.Fatalf("completions %+v", wcs)
	}
	if qp.State() != verbs.QPStateRTS {
		t.Fatalf("state %v", qp.State())
	}
}

// TestAH checks address handles: what CreateAH refuses, sends without a
// usable one, and a PD that cannot close while one is open.
func TestAH(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUD})
	good := p.B.QP.Endpoint(0).AHAttr()
	for name, a := range map[string]verbs.AHAttr{
		"not global": {DGID: good.DGID, PortNum: 1},
		"no GID":     {IsGlobal: true, PortNum: 1},
		"SGID 1":     {IsGlobal: true, DGID: good.DGID, SGIDIndex: 1},
		"port 2":     {IsGlobal: true, DGID: good.DGID, PortNum: 2},
		"IPv6 GID":   {IsGlobal: true, DGID: verbs.GIDFromAddr(netip.MustParseAddr("fd00::9"))},
		"multicast":  {IsGlobal: true, DGID: verbs.GIDFromAddr(netip.MustParseAddr("239.1.2.3"))},
		"multicast6": {IsGlobal: true, DGID: verbs.GIDFromAddr(netip.MustParseAddr("ff02::1"))},
	} {
		if _, err := p.A.PD.CreateAH(&a); !errors.Is(err, verbs.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := p.A.PD.CreateAH(nil); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Errorf("nil: %v", err)
	}
	if got := p.A.AH.Attr(); got.DGID != good.DGID || got.DestPort != good.DestPort || !got.IsGlobal {
		t.Errorf("Attr %+v", got)
	}
	buf := p.A.Buffer(t, 8, 0)
	otherPD, err := p.A.Dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := otherPD.CreateAH(&good)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := p.A.PD.CreateAH(&good)
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil || closed.Close() != nil {
		t.Fatal("close AH twice", err)
	}
	for name, ah := range map[string]*verbs.AH{"nil": nil, "other PD": foreign, "closed": closed} {
		err := p.A.QP.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{buf.SGE(0, 8)}, AH: ah, RemoteQPN: p.A.PeerQPN})
		if !errors.Is(err, verbs.ErrInvalidAH) {
			t.Errorf("%s AH: %v, want ErrInvalidAH", name, err)
		}
	}
	if err := otherPD.Close(); !errors.Is(err, verbs.ErrBusy) {
		t.Errorf("close PD with an AH: %v, want ErrBusy", err)
	}
	if err := foreign.Close(); err != nil {
		t.Fatal(err)
	}
	if err := otherPD.Close(); err != nil {
		t.Errorf("close PD after its AH: %v", err)
	}
}

// TestUDModifyMasks checks UD's attribute masks (IBA 10.3.1): INIT needs
// the Q_Key and takes no access flags; RTR and RTS take no path.
func TestUDModifyMasks(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{Type: verbs.QPTypeUD})
	qp := freshQP(t, p.A, verbs.QPTypeUD)
	try := func(a verbs.QPAttr, m verbs.QPAttrMask, ok bool) {
		t.Helper()
		err := qp.Modify(&a, m)
		if ok && err != nil || !ok && !errors.Is(err, verbs.ErrInvalidAttrMask) {
			t.Errorf("mask %v: %v", m, err)
		}
	}
	init := verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, QKey: 5, AccessFlags: verbs.AccessRemoteWrite}
	try(init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort, false)
	try(init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey|verbs.QPAttrAccessFlags, false)
	try(init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey, true)
	rtr := verbs.QPAttr{State: verbs.QPStateRTR, AH: p.A.QP.Endpoint(0).AHAttr(), PathMTU: verbs.MTU1024}
	try(rtr, verbs.QPAttrState|verbs.QPAttrAV, false)
	try(rtr, verbs.QPAttrState|verbs.QPAttrPathMTU, false)
	try(rtr, verbs.QPAttrState, true)
	rts := verbs.QPAttr{State: verbs.QPStateRTS, SQPSN: 7, Timeout: 14}
	try(rts, verbs.QPAttrState, false)
	try(rts, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout, false)
	try(rts, verbs.QPAttrState|verbs.QPAttrSQPSN, true)
	if a, _ := qp.Query(); a.QKey != 5 || a.SQPSN != 7 || a.State != verbs.QPStateRTS {
		t.Errorf("query %+v", a)
	}
}

// TestUDCongestionMarks sends UD messages through a fabric that marks
// every one congestion experienced, with congestion control on: the
// receiver counts the marks and, having no one peer to tell, sends no
// CNP; everything arrives.
func TestUDCongestionMarks(t *testing.T) {
	net := memconn.NewNetwork(memconn.Options{Impairments: memconn.Impairments{Mark: 1}})
	var sides [2]*udSide
	for i, a := range []string{"10.0.0.1:4791", "10.0.0.2:4791"} {
		b, err := net.Listen(netip.MustParseAddrPort(a))
		if err != nil {
			t.Fatal(err)
		}
		sides[i] = newUDSide(t, verbs.DeviceConfig{Bind: b, CongestionControl: true}, 5)
	}
	a, b := sides[0], sides[1]
	ah := a.ah(t, b)
	src, dst := a.buffer(t, 64), b.buffer(t, grh+64)
	for i := range 10 {
		postRecv(t, b.qp, &verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{dst.SGE(0, grh+64)}})
		post(t, a.qp, &verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{src.SGE(0, 64)}, AH: ah, RemoteQPN: b.qp.QPN(), RemoteQKey: 5})
		if wc := verbstest.MustPoll(t, b.cq, 1)[0]; wc.Status != verbs.WCSuccess || wc.WRID != uint64(i) {
			t.Fatalf("message %d: %+v", i, wc)
		}
	}
	if c := b.dev.Counters(); c.Get(verbs.NpECNMarked) != 10 || c.Get(verbs.NpCNPSent) != 0 || c.Get(verbs.SentPkts) != 0 {
		t.Errorf("marked %d, CNPs %d, sent %d", c.Get(verbs.NpECNMarked), c.Get(verbs.NpCNPSent), c.Get(verbs.SentPkts))
	}
}
