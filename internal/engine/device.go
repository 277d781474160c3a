package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
)

// Limits of a device (reported by query, enforced on create).
const (
	MaxQP         = 1 << 16
	MaxQPWR       = 1 << 14
	MaxSGE        = 32
	MaxCQE        = 1<<15 - 1
	MaxMR         = 1 << 16
	MaxMW         = 1 << 16 // memory windows, a key range of their own
	MaxSRQ        = 1 << 16
	MaxInlineData = 512
	MaxQPRdAtomic = 128
	MaxMsgSize    = 1 << 31
	// firstQPN is the lowest user QP number; lower numbers are reserved
	// (QP1 is the GSI QP). A device's numbers start at a random base
	// (qpn.go).
	firstQPN = 0x11
)

// DeviceConfig configures a device. Bind is required.
type DeviceConfig struct {
	// Bind carries the device's datagrams: a UDP socket or an in-memory bind.
	Bind conn.Bind
	// Addr is the device's IP address, the source of its packets and its
	// GID. Zero means the address of Bind.
	Addr netip.Addr
	// ActiveMTU is the port's active MTU; zero means 4096.
	ActiveMTU ib.MTU
	// Congestion turns on RoCEv2 congestion control (DCQCN, cc.go): the
	// device sends ECN-capable datagrams, answers CE-marked ones with
	// CNPs and lowers its QPs' rates on CNPs.
	Congestion bool
}

// Device is a software RDMA NIC bound to one link.
type Device struct {
	bind      conn.Bind
	planner   conn.IPIDPlanner   // the bind, if it plans IPv4 IDs (GSO)
	runLimit  func(size int) int // the bind's RunLimit, if it coalesces sends; nil otherwise
	flows     conn.FlowOpener    // the bind, if it sends by flows (and plans)
	local     netip.AddrPort     // address and UDP port packets come from
	activeMTU ib.MTU
	mrs       *mem.Table
	counters  counters
	timers    *timerQueue
	worker    chan *QP // QPs handed over by busy schedulers
	events    chan Event

	congestion bool // DeviceConfig.Congestion, for its QPs

	// Receiving shared with pollers (progress.go): the gate the receive
	// loop and Progress take turns under, the link if it can share, and
	// Progress's own receive state and the calls it leaves to the loop
	// while a stream flows, under progMu.
	rxGate     sync.Mutex
	shared     conn.SharedReceiver
	progMu     sync.Mutex
	prog       *rxBatch
	progStream int
	// QPs whose turn Progress ended for the poller to answer, until
	// SettleOwed schedules them (the poller's next wait, or the worker,
	// which owedWake wakes).
	owedMu   sync.Mutex
	owed     []*QP
	owedN    atomic.Int32 // len(owed), stored under owedMu
	owedWake chan struct{}

	mu      sync.Mutex // guards qps' writers, nextQPN, nextPD, srqs and closed
	qps     qpTable
	srqs    int // open SRQs
	nextQPN uint32
	nextPD  uint32
	closed  bool

	stop chan struct{}
	// dead is closed when Close has flushed every QP: from then on the
	// CQs hold all the completions there will ever be.
	dead chan struct{}
	wg   sync.WaitGroup
}

// ErrClosed is returned by operations on a closed object: a destroyed QP,
// a closed CQ, or anything of a closed device.
var ErrClosed = errors.New("closed")

// NewDevice starts a device on cfg.Bind.
func NewDevice(cfg DeviceConfig) (*Device, error) {
	if cfg.Bind == nil {
		return nil, errors.New("engine: DeviceConfig.Bind is nil")
	}
	local := cfg.Bind.LocalAddr()
	if cfg.Addr.IsValid() {
		local = netip.AddrPortFrom(cfg.Addr.Unmap(), local.Port())
	}
	if !local.Addr().IsValid() || local.Addr().IsUnspecified() {
		return nil, fmt.Errorf("engine: device needs a concrete IP address, bind is on %v", cfg.Bind.LocalAddr())
	}
	mtu := cfg.ActiveMTU
	if mtu == 0 {
		mtu = ib.MTU4096
	}
	if s, ok := cfg.Bind.(conn.ECNSetter); ok && cfg.Congestion {
		// ECN-capable, so a congested hop marks rather than drops.
		if err := s.SetECN(conn.ECNECT0); err != nil {
			return nil, fmt.Errorf("engine: congestion control: %w", err)
		}
	}
	d := &Device{
		bind:      cfg.Bind,
		planner:   planner(cfg.Bind),
		runLimit:  runLimit(cfg.Bind),
		flows:     flows(cfg.Bind),
		local:     netip.AddrPortFrom(local.Addr().Unmap(), local.Port()),
		activeMTU: mtu,
		mrs:       mem.NewTable(MaxMR, MaxMW),
		timers:    newTimerQueue(),
		worker:    make(chan *QP, 1024),
		owedWake:  make(chan struct{}, 1),
		events:    make(chan Event, eventDepth),
		nextQPN:   randomQPNBase(),
		nextPD:    1,
		stop:      make(chan struct{}),
		dead:      make(chan struct{}),
	}
	d.congestion = cfg.Congestion
	if sr, ok := cfg.Bind.(conn.SharedReceiver); ok && sr.Coalesces() {
		sr.SetRecvGate(&d.rxGate)
		d.shared, d.prog = sr, newRxBatch()
	}
	d.raise(Event{Type: ib.EventPortActive, Port: 1})
	d.wg.Add(3)
	go d.recvLoop()
	go d.timerLoop()
	go d.workerLoop()
	return d, nil
}

// runLimit returns b's RunLimit if b coalesces sends (conn.RunLimiter).
func runLimit(b conn.Bind) func(int) int {
	if rl, ok := b.(conn.RunLimiter); ok {
		return rl.RunLimit
	}
	return nil
}

// planner returns b as an IPIDPlanner if it is one.
func planner(b conn.Bind) conn.IPIDPlanner {
	p, _ := b.(conn.IPIDPlanner)
	return p
}

// flows returns b as a FlowOpener if it is one and plans IPv4 IDs, as a
// flow's datagrams need.
func flows(b conn.Bind) conn.FlowOpener {
	f, _ := b.(conn.FlowOpener)
	if _, ok := b.(conn.IPIDPlanner); !ok {
		return nil
	}
	return f
}

// LocalAddr returns the device's IP address and UDP port.
func (d *Device) LocalAddr() netip.AddrPort { return d.local }

// GID returns the device's RoCEv2 GID (its IP address).
func (d *Device) GID() ib.GID { return ib.GIDFromAddr(d.local.Addr()) }

// ActiveMTU returns the port's active MTU.
func (d *Device) ActiveMTU() ib.MTU { return d.activeMTU }

// Counters returns a snapshot of the device counters.
func (d *Device) Counters() Counters { return Counters(d.counters.snapshot()) }

// MRs returns the device's memory-region table.
func (d *Device) MRs() *mem.Table { return d.mrs }

// AllocPD returns a new protection-domain id.
func (d *Device) AllocPD() (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, ErrClosed
	}
	pd := d.nextPD
	d.nextPD++
	return pd, nil
}

// CreateCQ creates a completion queue with room for at least n entries.
func (d *Device) CreateCQ(n int) (*CQ, error) {
	if n < 1 || n > MaxCQE {
		return nil, fmt.Errorf("%w: %d entries, must be 1..%d", ErrInvalidArgument, n, MaxCQE)
	}
	if d.Closed() {
		return nil, ErrClosed
	}
	return newCQ(d, n), nil
}

// Closed reports whether Close was called.
func (d *Device) Closed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// Done returns a channel that is closed once Close has flushed every QP.
func (d *Device) Done() <-chan struct{} { return d.dead }

// Dead reports whether Done is closed.
func (d *Device) Dead() bool {
	select {
	case <-d.dead:
		return true
	default:
		return false
	}
}

// Close stops the device: its goroutines end, the bind is closed, and its
// QPs stop as if moved to the error state: what they hold completes with
// WR_FLUSH_ERR (IBA 10.3.1) and later posts fail with ErrClosed. Memory
// regions stay valid until deregistered.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	qps := d.qps.all(nil) // no QP is added once closed is set
	d.mu.Unlock()
	for _, qp := range qps {
		qp.mu.Lock()
		qp.settle() // while the link is open
		qp.mu.Unlock()
	}
	close(d.stop)
	err := d.bind.Close()
	d.wg.Wait()
	d.progMu.Lock() // a Progress under way ends; later ones do nothing
	for _, qp := range qps {
		qp.shutdown(true)
	}
	d.raise(Event{Type: ib.EventPortErr, Port: 1})
	close(d.dead)
	return err
}

// lookupQP returns the QP numbered qpn, or nil.
func (d *Device) lookupQP(qpn uint32) *QP { return d.qps.get(qpn) }

// addQP assigns a QP number and enters qp in the table.
func (d *Device) addQP(qp *QP) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.qps.n >= MaxQP {
		return fmt.Errorf("%d QPs exist, the maximum", d.qps.n)
	}
	qp.qpn = d.nextFreeQPN(d.nextQPN)
	d.nextQPN = (qp.qpn + 1) & qpnMask
	d.qps.set(qp.qpn, qp)
	return nil
}

func (d *Device) removeQP(qp *QP) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.qps.get(qp.qpn) == qp {
		d.qps.set(qp.qpn, nil)
	}
}

// timerLoop schedules QPs whose deadlines passed.
func (d *Device) timerLoop() {
	defer d.wg.Done()
	var due []*QP
	for {
		select {
		case <-d.stop:
			return
		case <-d.timers.timer.C:
			due = d.timers.due(monoNow(), due[:0])
			for i, qp := range due {
				qp.task.schedule()
				due[i] = nil
			}
		}
	}
}

// workerLoop continues QPs that a scheduler handed over after its inline
// turns ran out.
func (d *Device) workerLoop() {
	defer d.wg.Done()
	for {
		select {
		case <-d.stop:
			return
		case qp := <-d.worker:
			qp.task.loop(maxInlineTurns) // a still-busy QP queues itself again: round robin
		case <-d.owedWake:
			d.SettleOwed()
		}
	}
}
