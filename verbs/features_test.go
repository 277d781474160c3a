package verbs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/capture/pcapread"
	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestPathMTU1024 runs SEND, WRITE and READ around a 1024-byte path MTU.
func TestPathMTU1024(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.PathMTU = verbs.MTU1024
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	if a, err := p.A.QP.Query(); err != nil || a.PathMTU != verbs.MTU1024 {
		t.Fatalf("path MTU %v, %v", a.PathMTU, err)
	}
	for _, n := range sizes(1024) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src, dst, back := p.A.Buffer(t, n, 9), p.B.Buffer(t, n, 0), p.A.Buffer(t, n, 0)
			clear(dst.Bytes())
			clear(back.Bytes())
			postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{dst.SGE(0, n)}})
			post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, n)}})
			if wc := verbstest.MustPoll(t, p.B.RecvCQ, 1)[0]; wc.ByteLen != uint32(n) || !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) {
				t.Fatalf("SEND: %+v or bytes differ", wc)
			}
			clear(dst.Bytes())
			post(t, p.A.QP, &verbs.SendWR{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{src.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
			post(t, p.A.QP, &verbs.SendWR{WRID: 3, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{back.SGE(0, n)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
			for _, wc := range verbstest.MustPoll(t, p.A.SendCQ, 3) {
				if wc.Status != verbs.WCSuccess {
					t.Fatalf("completion %+v", wc)
				}
			}
			if !bytes.Equal(back.Bytes()[:n], src.Bytes()[:n]) {
				t.Fatal("WRITE then READ did not return the bytes")
			}
		})
	}
}

// TestIPv6 connects two devices on [::1] and moves data both ways.
func TestIPv6(t *testing.T) {
	var devs [2]*verbs.Device
	var qps [2]*verbs.QP
	var cqs [2]*verbs.CQ
	var pds [2]*verbs.PD
	for i := range devs {
		d, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort("[::1]:0")})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		devs[i] = d
		pds[i], _ = d.AllocPD()
		cqs[i], _ = d.CreateCQ(16)
		qps[i], err = pds[i].CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: cqs[i], RecvCQ: cqs[i],
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if gid, _ := d.QueryGID(1, 0); gid.String() != "::1" {
			t.Errorf("GID %v, want ::1", gid)
		}
	}
	o := verbs.DefaultConnectOptions()
	if err := qps[0].ConnectRC(5, qps[1].Endpoint(6), o); err != nil {
		t.Fatal(err)
	}
	if err := qps[1].ConnectRC(6, qps[0].Endpoint(5), o); err != nil {
		t.Fatal(err)
	}
	src, _ := pds[0].RegMR(bytes.Repeat([]byte("ipv6"), 3000), 0)
	dst, _ := pds[1].RegMR(make([]byte, 12000), rwra)
	post(t, qps[0], &verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, 12000)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	if wc := verbstest.MustPoll(t, cqs[0], 1)[0]; wc.Status != verbs.WCSuccess || !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Fatalf("WRITE over IPv6: %+v", wc)
	}
}

// TestDeregisteredKey: once MR.Close returns, the old rkey is refused.
func TestDeregisteredKey(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	target, err := p.B.PD.RegMR(make([]byte, 64), rwra)
	if err != nil {
		t.Fatal(err)
	}
	local := p.A.Buffer(t, 64, 1)
	wr := verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: target.Addr(), RKey: target.RKey()}
	post(t, p.A.QP, &wr)
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
		t.Fatalf("before Close: %+v", wc)
	}
	if err := target.Close(); err != nil {
		t.Fatal(err)
	}
	clear(target.Bytes())
	wr.WRID = 2
	post(t, p.A.QP, &wr)
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCRemAccessErr {
		t.Fatalf("after Close: %+v, want remote access error", wc)
	}
	if !bytes.Equal(target.Bytes(), make([]byte, 64)) {
		t.Error("a WRITE reached deregistered memory")
	}
	// A region registered in the freed slot has a new tag: the old key
	// still fails against it.
	again, err := p.B.PD.RegMR(make([]byte, 64), rwra)
	if err != nil {
		t.Fatal(err)
	}
	if again.RKey() == target.RKey() {
		t.Errorf("reused key %#x", again.RKey())
	}
}

// TestCQOverrun: completions that do not fit are reported, not lost silently.
func TestCQOverrun(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{CQSize: 2})
	for i := range 3 {
		post(t, p.A.QP, &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			RemoteAddr: 0, RKey: 0}) // zero-length: no key needed
	}
	waitCounter(t, p.A.Dev, verbs.CQOverflow, 1)
	wcs := make([]verbs.WC, 4)
	n, err := p.A.SendCQ.Poll(wcs)
	if n != 2 || err != nil {
		t.Fatalf("Poll = %d, %v; want the 2 completions that fit", n, err)
	}
	if _, err := p.A.SendCQ.Poll(wcs); !errors.Is(err, verbs.ErrCQOverrun) {
		t.Fatalf("Poll after the overrun: %v, want ErrCQOverrun", err)
	}
}

func waitCounter(t *testing.T, d *verbs.Device, c verbs.Counter, want uint64) {
	t.Helper()
	for i := 0; d.Counters().Get(c) < want; i++ {
		if i == 1000 {
			t.Fatalf("%v = %d, want %d", c, d.Counters().Get(c), want)
		}
		sleepBriefly()
	}
}

func TestModifyAndQuery(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	a, err := p.A.QP.Query()
	if err != nil {
		t.Fatal(err)
	}
	if a.State != verbs.QPStateRTS || a.DestQPN != p.B.QP.QPN() || a.SQPSN != 0xfffff0 || a.RQPSN != 0x123 ||
		a.Timeout != 14 || a.RetryCnt != 7 || a.RNRRetry != 7 || a.AH.DGID != verbs.GIDFromAddr(p.B.Dev.Addr().Addr()) {
		t.Errorf("query after connect: %+v", a)
	}
	qp, err := p.A.PD.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: p.A.SendCQ, RecvCQ: p.A.RecvCQ,
		Cap: verbs.QPCap{MaxSendWR: 3, MaxRecvWR: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if c := qp.Cap(); c.MaxSendWR != 4 || c.MaxRecvWR != 8 {
		t.Errorf("queue sizes %+v, want rounded up to 4 and 8", c)
	}
	for _, c := range []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{State: verbs.QPStateRTR}, verbs.QPAttrState},                                                                                   // RESET→RTR
		{verbs.QPAttr{State: verbs.QPStateInit}, verbs.QPAttrState | verbs.QPAttrPort},                                                               // ACCESS_FLAGS, PKEY missing
		{verbs.QPAttr{State: verbs.QPStateInit, PortNum: 2}, verbs.QPAttrState | verbs.QPAttrPort | verbs.QPAttrPKeyIndex | verbs.QPAttrAccessFlags}, // no port 2
	} {
		if err := qp.Modify(&c.attr, c.mask); err == nil || qp.State() != verbs.QPStateReset {
			t.Errorf("modify %+v mask %v: err %v, state %v", c.attr, c.mask, err, qp.State())
		}
	}
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPStateErr}, verbs.QPAttrState); err == nil {
		t.Error("RESET→ERR accepted")
	}
}

// TestSignaling: unsignaled successful WRs complete silently unless the QP
// was created with sq_sig_all.
func TestSignaling(t *testing.T) {
	for _, all := range []bool{false, true} {
		p := verbstest.New(t, verbstest.Options{SQSigAll: all})
		local, remote := p.A.Buffer(t, 8, 1), p.B.Buffer(t, 8, 0)
		for i := range 3 {
			wr := verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{local.SGE(0, 8)},
				RemoteAddr: remote.Addr(), RKey: remote.RKey()}
			if i == 2 {
				wr.Flags = verbs.SendSignaled
			}
			post(t, p.A.QP, &wr)
		}
		want := 1
		if all {
			want = 3
		}
		wcs := verbstest.MustPoll(t, p.A.SendCQ, want)
		if wcs[want-1].WRID != 2 {
			t.Errorf("sq_sig_all=%v: last completion %+v", all, wcs[want-1])
		}
		if n, _ := p.A.SendCQ.Poll(make([]verbs.WC, 4)); n != 0 {
			t.Errorf("sq_sig_all=%v: %d extra completions", all, n)
		}
	}
}

// TestInline: INLINE data is taken at post time.
func TestInline(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	src, dst := p.A.Buffer(t, 32, 0), p.B.Buffer(t, 32, 0)
	copy(src.Bytes(), "inline data, copied at post time")
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled | verbs.SendInline,
		SGList: []verbs.SGE{src.SGE(0, 32)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	clear(src.Bytes()) // may race the sender: only the posted copy counts
	verbstest.MustPoll(t, p.A.SendCQ, 1)
	if got := string(dst.Bytes()); got != "inline data, copied at post time" {
		t.Errorf("target holds %q", got)
	}
}

// TestFenceAndSolicited watches the wire: a fenced SEND waits for the READ
// before it, and the SOLICITED flag sets SE on the last packet only.
func TestFenceAndSolicited(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	var readDone, sendEarly, seFirst, seLast atomic.Bool
	p.Net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
		pk := wire.Packet(d.Data)
		if pk.Validate() != nil {
			return memconn.Deliver
		}
		switch op := pk.Opcode(); {
		case op == wire.RCReadResponseLast || op == wire.RCReadResponseOnly:
			readDone.Store(true)
		case op == wire.RCSendFirst:
			sendEarly.Store(!readDone.Load())
			seFirst.Store(pk.BTH().SolicitedEvent())
		case op == wire.RCSendLast:
			seLast.Store(pk.BTH().SolicitedEvent())
		}
		return memconn.Deliver
	})
	remote, local := p.B.Buffer(t, 40000, 3), p.A.Buffer(t, 40000, 0)
	postRecv(t, p.B.QP, &verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{p.B.Buffer(t, 9000, 0).SGE(0, 9000)}})
	post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{local.SGE(0, 40000)},
		RemoteAddr: remote.Addr(), RKey: remote.RKey(),
		Next: &verbs.SendWR{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendFence | verbs.SendSolicited,
			SGList: []verbs.SGE{local.SGE(0, 9000)}}})
	verbstest.MustPoll(t, p.A.SendCQ, 1)
	verbstest.MustPoll(t, p.B.RecvCQ, 1)
	if sendEarly.Load() {
		t.Error("the fenced SEND left before the READ's last response")
	}
	if seFirst.Load() || !seLast.Load() {
		t.Errorf("SE on FIRST %v, on LAST %v; want only on LAST", seFirst.Load(), seLast.Load())
	}
}

func TestDeviceQueries(t *testing.T) {
	p := verbstest.New(t, verbstest.Options{})
	a := p.A.Dev.Query()
	if a.MaxQPWR != engine.MaxQPWR || a.MaxSGE != 32 || !a.AtomicCapHCA || a.PhysPortCnt != 1 || a.NodeGUID == p.B.Dev.Query().NodeGUID {
		t.Errorf("device attributes %+v", a)
	}
	port, err := p.A.Dev.QueryPort(1)
	if err != nil || port.State != verbs.PortActive || port.ActiveMTU != verbs.MTU4096 || port.MaxMTU != verbs.MTU4096 ||
		port.LinkLayer != "Ethernet" || port.State.String() != "PORT_ACTIVE" {
		t.Errorf("port %+v, %v", port, err)
	}
	if _, err := p.A.Dev.QueryPort(2); err == nil {
		t.Error("port 2 exists")
	}
	if gid, err := p.A.Dev.QueryGID(1, 0); err != nil || gid.String() != "::ffff:10.0.0.1" {
		t.Errorf("GID %v, %v", gid, err)
	}
	if _, err := p.A.Dev.QueryGID(1, 1); err == nil {
		t.Error("GID index 1 exists")
	}
	found := 0
	for _, d := range verbs.Devices() {
		if d == p.A.Dev || d == p.B.Dev {
			found++
		}
	}
	if found != 2 {
		t.Errorf("Devices() lists %d of the 2 open devices", found)
	}
	d, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort("127.0.0.1:0"), LinkMTU: 1500})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if port, _ := d.QueryPort(1); port.ActiveMTU != verbs.MTU1024 {
		t.Errorf("link MTU 1500: active MTU %v, want 1024", port.ActiveMTU)
	}
}

// TestHugeReadRefused: a READ needing more response PSNs than half the
// 24-bit space can order is refused at post time.
func TestHugeReadRefused(t *testing.T) {
	o := verbs.DefaultConnectOptions()
	o.PathMTU = verbs.MTU256
	p := verbstest.New(t, verbstest.Options{Connect: &o})
	local := p.A.Buffer(t, 8, 0)
	// Built by hand, as MR.SGE refuses a range past the region: never
	// gathered, the post is refused first.
	huge := verbs.SGE{Addr: local.Addr(), Length: 1 << 30, LKey: local.LKey()}
	err := p.A.QP.PostSend(&verbs.SendWR{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{huge}, RemoteAddr: 1 << 20, RKey: 1})
	if !errors.Is(err, verbs.ErrMessageSize) {
		t.Fatalf("READ of 1 GiB at MTU 256: %v, want ErrMessageSize", err)
	}
	ok := local.SGE(0, 8)
	if err := p.A.QP.PostSend(&verbs.SendWR{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{ok}, RemoteAddr: 1 << 20, RKey: 1}); err != nil {
		t.Fatalf("a small READ was refused: %v", err)
	}
}

// TestCapture: a device with Capture writes a pcap of what it sent and
// received, which decodes with valid ICRCs.
func TestCapture(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			var pcap bytes.Buffer
			var mu sync.Mutex
			o := verbstest.Options{Link: link, CaptureA: &lockedWriter{w: &pcap, mu: &mu}}
			p := verbstest.New(t, o)
			src, dst := p.A.Buffer(t, 5000, 1), p.B.Buffer(t, 5000, 0)
			post(t, p.A.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{src.SGE(0, 5000)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
			verbstest.MustPoll(t, p.A.SendCQ, 1)
			p.A.Dev.Close() // flush nothing in flight: the frames are written synchronously
			mu.Lock()
			r, err := pcapread.NewReader(bytes.NewReader(pcap.Bytes()))
			mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			r.AnyPort = true // the UDP test devices use ephemeral ports
			// The frames as opcode and PSN, each once: a loaded machine may
			// retransmit after the ACK timeout, and a copy is no error.
			type frame struct {
				op  wire.Opcode
				psn wire.PSN
			}
			var ops []frame
			seen := map[frame]bool{}
			for {
				f, err := r.Next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("reading the capture: %v", err)
					}
					break
				}
				if err := f.Packet.CheckICRC(&f.Envelope); err != nil {
					t.Errorf("%v: %v", f.Packet, err)
				}
				fr := frame{f.Packet.Opcode(), f.Packet.BTH().PSN()}
				if !seen[fr] {
					seen[fr] = true
					ops = append(ops, fr)
				}
			}
			var want []frame
			if len(ops) > 0 {
				psn := ops[0].psn
				want = []frame{{wire.RCWriteFirst, psn}, {wire.RCWriteLast, psn.Next()}, {wire.RCAcknowledge, psn.Next()}}
			}
			if len(ops) == 0 || fmt.Sprint(ops) != fmt.Sprint(want) {
				t.Errorf("captured %v, want %v", ops, want)
			}
		})
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
