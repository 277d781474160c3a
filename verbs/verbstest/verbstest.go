// Package verbstest builds queue pairs on two devices for tests — RC or
// UC QPs connected to each other, or UD QPs with address handles for each
// other — over the in-memory fabric (with its loss, duplication and delay
// controls) or over UDP on loopback. It is a real stack, not a mock.
package verbstest

import (
	"fmt"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/leakcheck"
	"github.com/goverbs/goverbs/verbs"
)

// Link selects how the two devices are connected.
type Link int

const (
	// Mem connects the devices through conn/memconn in this process.
	Mem Link = iota
	// UDP gives each device its own UDP socket on 127.0.0.1.
	UDP
)

func (l Link) String() string {
	if l == UDP {
		return "udp"
	}
	return "mem"
}

// Options configure a Pair. The zero value works.
type Options struct {
	// Link is how the devices are connected: Mem (the zero value), whose
	// timers run in virtual time inside testing/synctest.Test, or UDP.
	Link Link
	// Type is the QPs' transport service; zero means RC.
	Type verbs.QPType
	// QKey is both UD QPs' Q_Key; zero means DefaultQKey.
	QKey uint32
	// Impairments apply to the in-memory fabric.
	Impairments memconn.Impairments
	// Cap is used for both QPs; zero fields get small defaults.
	Cap verbs.QPCap
	// CQSize is the size of each CQ; 0 means 256.
	CQSize int
	// Connect configures both sides; nil means DefaultConnectOptions.
	Connect *verbs.ConnectOptions
	// ConnectB overrides Connect for side B.
	ConnectB *verbs.ConnectOptions
	// SQSigAll is passed to both QPs.
	SQSigAll bool
	// CaptureA, if set, receives a pcap of side A's packets.
	CaptureA io.Writer
	// BusyPoll is passed to both devices of a UDP pair
	// (verbs.DeviceConfig.BusyPoll); zero adapts.
	BusyPoll time.Duration
	// CompChannel gives each side a completion channel (Side.Chan) on
	// which both its CQs are created.
	CompChannel bool
	// Binds, if set, are the links of sides A and B
	// (verbs.DeviceConfig.Bind), in place of Link's.
	Binds *[2]conn.Bind
}

// Side is one end of a Pair.
type Side struct {
	Dev    *verbs.Device
	PD     *verbs.PD
	SendCQ *verbs.CQ
	RecvCQ *verbs.CQ
	QP     *verbs.QP
	// Chan is the completion channel of both CQs with
	// Options.CompChannel, else nil.
	Chan *verbs.CompChannel
	// AH is, in a UD pair, the address handle of the other side's device,
	// and PeerQPN the other side's QP: what a SendWR names.
	AH      *verbs.AH
	PeerQPN verbs.QPN
}

// DefaultQKey is the Q_Key of UD pairs, the one ibv_ud_pingpong and
// perftest use.
const DefaultQKey = 0x11111111

// Pair is two QPs on two devices, connected to each other (RC, UC) or
// ready to send to each other (UD).
type Pair struct {
	A, B *Side
	// Net is the fabric of a Mem pair, for changing impairments or adding a
	// filter during the test.
	Net *memconn.Network
}

// New builds a connected pair and closes it when the test ends.
func New(tb testing.TB, o Options) *Pair {
	tb.Helper()
	// Registered first, so it runs after the devices are closed: their
	// goroutines must all be gone.
	leakcheck.Check(tb)
	p := &Pair{}
	var cfgA, cfgB verbs.DeviceConfig
	switch {
	case o.Binds != nil:
		cfgA, cfgB = verbs.DeviceConfig{Bind: o.Binds[0]}, verbs.DeviceConfig{Bind: o.Binds[1]}
	case o.Link == Mem:
		p.Net = memconn.NewNetwork(memconn.Options{Impairments: o.Impairments})
		a, err := p.Net.Listen(netip.MustParseAddrPort("10.0.0.1:4791"))
		if err != nil {
			tb.Fatal(err)
		}
		b, err := p.Net.Listen(netip.MustParseAddrPort("10.0.0.2:4791"))
		if err != nil {
			tb.Fatal(err)
		}
		cfgA, cfgB = verbs.DeviceConfig{Bind: a}, verbs.DeviceConfig{Bind: b}
	case o.Link == UDP:
		lo := netip.MustParseAddrPort("127.0.0.1:0") // ephemeral ports
		cfgA, cfgB = verbs.DeviceConfig{Addr: lo, BusyPoll: o.BusyPoll}, verbs.DeviceConfig{Addr: lo, BusyPoll: o.BusyPoll}
	}
	cfgA.Capture = o.CaptureA
	p.A = newSide(tb, cfgA, &o)
	p.B = newSide(tb, cfgB, &o)
	ca := verbs.DefaultConnectOptions()
	if o.Connect != nil {
		ca = *o.Connect
	}
	cb := ca
	if o.ConnectB != nil {
		cb = *o.ConnectB
	}
	const psnA, psnB = 0xfffff0, 0x000123 // A wraps its PSN early on purpose
	connect(tb, p.A, p.B, psnA, psnB, ca, &o)
	connect(tb, p.B, p.A, psnB, psnA, cb, &o)
	return p
}

// connect readies s's QP to talk to peer's: RC and UC connect, UD gets
// its Q_Key and an address handle of the peer.
func connect(tb testing.TB, s, peer *Side, psn, peerPSN uint32, c verbs.ConnectOptions, o *Options) {
	tb.Helper()
	var err error
	switch o.Type {
	case verbs.QPTypeUC:
		err = s.QP.ConnectUC(psn, peer.QP.Endpoint(peerPSN), c)
	case verbs.QPTypeUD:
		qkey := o.QKey
		if qkey == 0 {
			qkey = DefaultQKey
		}
		if err = s.QP.ReadyUD(qkey, psn); err == nil {
			a := peer.QP.Endpoint(0).AHAttr()
			s.AH, err = s.PD.CreateAH(&a)
			s.PeerQPN = peer.QP.QPN()
		}
	default:
		err = s.QP.ConnectRC(psn, peer.QP.Endpoint(peerPSN), c)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

func newSide(tb testing.TB, cfg verbs.DeviceConfig, o *Options) *Side {
	tb.Helper()
	d, err := verbs.OpenDevice(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	pd, err := d.AllocPD()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Side{Dev: d, PD: pd}
	if o.CompChannel {
		if s.Chan, err = d.CreateCompChannel(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { // its events end once the device is closed
			d.Close()
			for range s.Chan.Events() {
			}
		})
	}
	return s.another(tb, o)
}

// another returns a side on the same device and PD with new CQs and QP.
func (s0 *Side) another(tb testing.TB, o *Options) *Side {
	tb.Helper()
	s := &Side{Dev: s0.Dev, PD: s0.PD, Chan: s0.Chan}
	var err error
	n := o.CQSize
	if n == 0 {
		n = 256
	}
	create := s.Dev.CreateCQ
	if s.Chan != nil {
		create = func(n int) (*verbs.CQ, error) { return s.Dev.CreateCQWithChannel(n, s.Chan) }
	}
	if s.SendCQ, err = create(n); err != nil {
		tb.Fatal(err)
	}
	if s.RecvCQ, err = create(n); err != nil {
		tb.Fatal(err)
	}
	c := o.Cap
	c.MaxSendWR = max(c.MaxSendWR, 64)
	c.MaxRecvWR = max(c.MaxRecvWR, 64)
	c.MaxSendSGE = max(c.MaxSendSGE, 4)
	c.MaxRecvSGE = max(c.MaxRecvSGE, 4)
	c.MaxInlineData = max(c.MaxInlineData, 64)
	typ := o.Type
	if typ == 0 {
		typ = verbs.QPTypeRC
	}
	s.QP, err = s.PD.CreateQP(&verbs.QPInitAttr{Type: typ, SendCQ: s.SendCQ, RecvCQ: s.RecvCQ, Cap: c, SQSigAll: o.SQSigAll})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Poll waits until n completions arrived on cq or the timeout passed, and
// returns what it got.
func Poll(cq *verbs.CQ, n int, timeout time.Duration) ([]verbs.WC, error) {
	wcs := make([]verbs.WC, n)
	got := 0
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for got < n {
		k, err := cq.Poll(wcs[got:])
		if err != nil {
			return wcs[:got], err
		}
		got += k
		if got == n {
			break
		}
		select {
		case <-cq.Notify():
		case <-deadline.C:
			return wcs[:got], fmt.Errorf("got %d of %d completions in %v", got, n, timeout)
		}
	}
	return wcs, nil
}

// MustPoll is Poll that fails the test on a timeout.
func MustPoll(tb testing.TB, cq *verbs.CQ, n int) []verbs.WC {
	tb.Helper()
	wcs, err := Poll(cq, n, 10*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	return wcs
}

// Buffer registers a fresh buffer of n bytes (at least one: a region
// cannot be empty) with all access rights on side s and fills it with a
// pattern derived from seed.
func (s *Side) Buffer(tb testing.TB, n int, seed byte) *verbs.MR {
	tb.Helper()
	buf := make([]byte, max(n, 1))
	for i := range buf {
		buf[i] = byte(i*31) ^ seed
	}
	mr, err := s.PD.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mr.Close() })
	return mr
}

// Another creates one more connected QP pair on the same two devices, each
// QP with its own CQs.
func (p *Pair) Another(tb testing.TB, o Options) *Pair {
	tb.Helper()
	q := &Pair{Net: p.Net}
	q.A = p.A.another(tb, &o)
	q.B = p.B.another(tb, &o)
	c := verbs.DefaultConnectOptions()
	if o.Connect != nil {
		c = *o.Connect
	}
	connect(tb, q.A, q.B, 1, 2, c, &o)
	connect(tb, q.B, q.A, 2, 1, c, &o)
	return q
}
