package verbs_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/leakcheck"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
)

// Congestion control over a fabric that marks: a WRITE stream's rate falls
// while the fabric marks a fifth of its packets congestion experienced (the
// receiver answers with CNPs, at most one per 50 µs, and the sender cuts
// its rate until marks come rarely enough), and comes back once the marks
// stop. Virtual time: a 100 µs round trip,
// 32 WRITEs of 4 KiB in flight, about 1.3 GB/s unmarked.
func TestCongestionControlMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leakcheck.Check(t)
		const (
			msg      = 4096
			inFlight = 32
		)
		clean := memconn.Impairments{Delay: 50 * time.Microsecond}
		net := memconn.NewNetwork(memconn.Options{Impairments: clean})
		la, err := net.Listen(netip.MustParseAddrPort("10.0.0.1:4791"))
		if err != nil {
			t.Fatal(err)
		}
		lb, err := net.Listen(netip.MustParseAddrPort("10.0.0.2:4791"))
		if err != nil {
			t.Fatal(err)
		}
		a := openSide(t, verbs.DeviceConfig{Bind: la, CongestionControl: true})
		b := openSide(t, verbs.DeviceConfig{Bind: lb, CongestionControl: true})
		o := verbs.DefaultConnectOptions()
		o.PathMTU = verbs.MTU1024
		if err := a.QP.ConnectRC(1, b.QP.Endpoint(2), o); err != nil {
			t.Fatal(err)
		}
		if err := b.QP.ConnectRC(2, a.QP.Endpoint(1), o); err != nil {
			t.Fatal(err)
		}
		src := a.Buffer(t, inFlight*msg, 7)
		dst := b.Buffer(t, inFlight*msg, 0)
		posted, done := 0, 0
		wcs := make([]verbs.WC, inFlight)
		// stream keeps inFlight WRITEs outstanding for d and returns the
		// bytes completed meanwhile, in bytes per second of virtual time.
		stream := func(d time.Duration) float64 {
			end, from := time.Now().Add(d), done
			for time.Now().Before(end) {
				for ; posted-done < inFlight; posted++ {
					i := posted % inFlight
					post(t, a.QP, &verbs.SendWR{WRID: uint64(posted), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
						SGList: []verbs.SGE{src.SGE(i*msg, msg)}, RemoteAddr: dst.Addr() + uint64(i*msg), RKey: dst.RKey()})
				}
				time.Sleep(10 * time.Microsecond)
				n, err := a.SendCQ.Poll(wcs)
				if err != nil {
					t.Fatal(err)
				}
				for _, wc := range wcs[:n] {
					if wc.Status != verbs.WCSuccess {
						t.Fatalf("WRITE %d: %v", wc.WRID, wc.Status)
					}
					done++
				}
			}
			return float64((done-from)*msg) / d.Seconds()
		}
		before := stream(2 * time.Millisecond)
		// Every CNP is as RoCEv2 Annex A17 has it: BTH (opcode CNP, BECN,
		// P_Key 0xFFFF, PSN 0) to the sender's QP, 16 reserved zero
		// bytes, ICRC.
		var badCNP atomic.Value
		net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
			p := wire.Packet(d.Data)
			if p.Validate() != nil || p.Opcode() != wire.CNP {
				return memconn.Deliver
			}
			h := p.BTH()
			if len(p) != wire.BTHSize+wire.CNPReservedSize+wire.ICRCSize || !h.BECN() || h.PSN() != 0 || h.PKey() != 0xffff ||
				(h.DestQP() != uint32(a.QP.QPN()) && h.DestQP() != uint32(b.QP.QPN())) || !bytes.Equal(p[wire.BTHSize:wire.BTHSize+wire.CNPReservedSize], make([]byte, wire.CNPReservedSize)) {
				badCNP.Store(fmt.Sprintf("% x", d.Data))
			}
			return memconn.Deliver
		})
		marked := clean
		marked.Mark = 0.2
		net.SetImpairments(marked)
		stream(time.Millisecond) // the cuts take effect
		during := stream(3 * time.Millisecond)
		net.SetImpairments(clean)
		// The counters are read once every marked packet and the CNP it
		// drew have arrived: a 50 µs hop each, so 200 µs of quiet.
		time.Sleep(200 * time.Microsecond)
		ca, cb := a.Dev.Counters(), b.Dev.Counters()
		stream(15 * time.Millisecond)
		after := stream(5 * time.Millisecond)
		t.Logf("WRITE stream: %.0f MB/s unmarked, %.1f MB/s marked, %.0f MB/s after; CNPs: %d sent, %d handled; %d packets marked",
			before/1e6, during/1e6, after/1e6, cb.Get(verbs.NpCNPSent), ca.Get(verbs.RpCNPHandled), net.Stats().Marked)
		if during > before/8 {
			t.Errorf("marked, the stream ran at %.0f B/s, want under an eighth of the unmarked %.0f B/s", during, before)
		}
		if after < before*3/4 {
			t.Errorf("after the marks stopped the stream ran at %.0f B/s, want it back near the unmarked %.0f B/s", after, before)
		}
		// One CNP per 50 µs at most, from the first mark on; every one
		// reached the sender and was acted on. (The ACKs are marked too,
		// so the WRITE's sender may also send a CNP or two to its peer.)
		sent := cb.Get(verbs.NpCNPSent)
		if sent == 0 || sent > uint64(4*time.Millisecond/(50*time.Microsecond))+1 || cb.Get(verbs.NpECNMarked) <= sent {
			t.Errorf("receiver: %d marked packets answered with %d CNPs, want a CNP per 50 µs at most", cb.Get(verbs.NpECNMarked), sent)
		}
		if b := badCNP.Load(); b != nil {
			t.Errorf("a CNP not as Annex A17 has it: %s", b)
		}
		if h, all := ca.Get(verbs.RpCNPHandled)+cb.Get(verbs.RpCNPHandled), sent+ca.Get(verbs.NpCNPSent); h != all {
			t.Errorf("the QPs handled %d CNPs, their peers sent %d", h, all)
		}
		for posted > done {
			time.Sleep(10 * time.Microsecond)
			n, _ := a.SendCQ.Poll(wcs)
			done += n
		}
		if !bytes.Equal(dst.Bytes(), src.Bytes()) {
			t.Error("the WRITEs left other bytes than the source holds")
		}
	})
}
