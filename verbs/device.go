package verbs

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// DeviceConfig describes a software RDMA device. The zero value is a device
// on 127.0.0.1:4791.
type DeviceConfig struct {
	// Name is the device name, unique among the devices open in the
	// process (OpenDevice refuses one in use); "" picks the first of
	// "goverbs0", "goverbs1", … that is free.
	Name string
	// Addr is the IP address and UDP port to bind. The zero value means
	// 127.0.0.1 on the RoCEv2 port 4791; an address with port 0 gets a
	// free port from the kernel. Devices that share a host need their own
	// ports, which peers learn from Endpoint.Port (AHAttr.DestPort).
	Addr netip.AddrPort
	// Bind, if set, is the link to use instead of a UDP socket, such as an
	// in-memory fabric from conn/memconn. Addr is then ignored.
	Bind conn.Bind
	// LinkMTU is the MTU of the underlying link; the port's active MTU is
	// derived from it as rxe does (LinkMTU − 80, rounded down to an IB
	// MTU: 4096 on a 9000-byte link, 1024 on a 1500-byte one). Zero means,
	// for a UDP socket, the MTU of the interface that has the address, as
	// rxe takes its net device's (loopback's 65536 gives 4096), or 1500
	// when no interface has it; 4176 (active MTU 4096) on other links.
	LinkMTU int
	// Capture, if set, receives a pcap stream (Ethernet/IP/UDP framing,
	// readable by Wireshark) of every packet the device sends and
	// receives. It slows the data path; use it to debug. Wireshark decodes
	// UDP port 4791 as RoCEv2; for other ports use Decode As → RRoCE.
	Capture io.Writer
	// BusyPoll sets how long the receive loop keeps polling the device's
	// UDP socket once it has run dry, before it sleeps until the next
	// datagram. A datagram that arrives meanwhile costs no wake-up, which
	// on virtual machines is tens of microseconds of latency, for the
	// price of a busy thread while it waits.
	//
	// Zero, the default, adapts: the receive loop polls through the gaps
	// of a conversation (up to 200 µs, following the gaps it measures)
	// and sleeps once traffic stops, so a busy device pays no wake-ups
	// and an idle one uses no CPU. A positive value polls for exactly
	// that long after every datagram (50 µs, Linux's suggestion for its
	// own busy-poll, catches a peer's answer on one host). BusyPollOff
	// (any negative value) never polls: every datagram after a pause
	// costs a wake-up, and waiting costs no CPU at all. The receiver of a
	// bulk stream with one core to itself does better without polling: a
	// polling receive loop takes the datagrams a few at a time, a sleeping
	// one wakes to a batch. It applies to the socket OpenDevice opens, not
	// to a link given in Bind.
	BusyPoll time.Duration
	// CongestionControl turns on RoCEv2 congestion control as RoCE NICs
	// run it (DCQCN; doc/protocol.md §8.5): the device's datagrams are
	// ECN-capable (ECT(0)), a packet that arrives marked congestion
	// experienced is answered with a CNP, and a CNP lowers the rate of the
	// QP it names, which then recovers while no more come. A UDP socket
	// does not report the marks it receives, so over UDP only the
	// reaction to CNPs (from a RoCE NIC) works; memconn reports them. Off
	// by default; the environment variable GOVERBS_CC=1 turns it on for
	// every device (for the tools).
	CongestionControl bool
}

// congestionEnv names the environment variable that, set to 1, turns
// congestion control on for every device.
const congestionEnv = "GOVERBS_CC"

// BusyPollOff as DeviceConfig.BusyPoll makes the receive loop sleep as
// soon as its socket is empty (pure event mode).
const BusyPollOff time.Duration = -1

// Device is an open software RDMA device (struct ibv_context).
//
// Its objects follow libibverbs' lifecycle: each has Close (io.Closer);
// closing one still in use (a PD with MRs, MWs, QPs, SRQs or AHs open, a
// CQ a QP still uses: [ErrBusy] lists them) fails with ErrBusy; closing
// twice returns nil; using a closed object fails with ErrClosed. Closing
// the Device itself always succeeds: its QPs stop as if moved to the
// error state, so every outstanding work request completes with
// WCWRFlushErr, and then its objects fail with ErrClosed, except Close,
// which still releases them in the usual order (a PD with objects open
// still refuses with ErrBusy).
type Device struct {
	name string
	e    *engine.Device

	// mu guards the lifecycle of the device's objects: the closed flags
	// of PD, CQ, QP and MR, and the counts of what uses a PD or a CQ.
	mu     sync.Mutex
	closed bool

	async asyncEvents
}

// registry is the devices open in this process (Devices).
var registry deviceRegistry

type deviceRegistry struct {
	sync.Mutex
	devs []*Device
	// all is a copy of devs made at each change, for pollers to read
	// without the lock (CQ.progress).
	all atomic.Pointer[[]*Device]
}

// changed publishes devs as all. r must be held.
func (r *deviceRegistry) changed() {
	all := slices.Clone(r.devs)
	r.all.Store(&all)
}

// listenErr is OpenDevice's error for a device that could not listen;
// on the default address (defaulted), taken, it says how to choose
// another.
func listenErr(err error, defaulted bool) error {
	if defaulted && errors.Is(err, syscall.EADDRINUSE) {
		return errorf("open device", "%w (the default address is taken, by another device or the kernel's rdma_rxe: set DeviceConfig.Addr, with port 0 for a free port)", err)
	}
	return errorf("open device", "%w", err)
}

// OpenDevice creates a software RDMA device and starts it.
func OpenDevice(cfg DeviceConfig) (*Device, error) {
	// A name in use is refused before anything is opened; taking it is
	// checked again once the device is made, for two opens at once.
	registry.Lock()
	_, err := registry.nameFor(cfg.Name)
	registry.Unlock()
	if err != nil {
		return nil, err
	}
	bind := cfg.Bind
	if bind == nil {
		addr := cfg.Addr
		if !addr.Addr().IsValid() {
			addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), conn.RoCEv2Port)
		} else if addr.Addr().Unmap().IsUnspecified() {
			// The device's GID is its address, which a peer needs.
			return nil, errorf("open device", "%w: DeviceConfig.Addr %v is no address of this host (the device's GID is its IP address): use one, or 127.0.0.1", ErrInvalidArgument, addr)
		}
		b, err := conn.ListenUDP(addr)
		if err != nil {
			return nil, listenErr(err, !cfg.Addr.Addr().IsValid())
		}
		b.SetBusyPoll(cfg.BusyPoll)
		bind = b
	}
	linkMTU := cfg.LinkMTU
	if linkMTU == 0 {
		linkMTU = defaultLinkMTU(bind.LocalAddr().Addr(), cfg.Bind == nil)
	}
	if cfg.Capture != nil {
		rec, err := capture.NewRecorder(cfg.Capture)
		if err != nil {
			bind.Close()
			return nil, fmt.Errorf("open device: capture: %w", err)
		}
		bind = conn.Observe(bind, rec)
	}
	cc := cfg.CongestionControl || os.Getenv(congestionEnv) == "1"
	e, err := engine.NewDevice(engine.DeviceConfig{Bind: bind, ActiveMTU: ib.ActiveMTU(linkMTU), Congestion: cc})
	if err != nil {
		bind.Close()
		return nil, errorf("open device", "%w", err)
	}
	registry.Lock()
	defer registry.Unlock()
	name, err := registry.nameFor(cfg.Name)
	if err != nil {
		e.Close()
		return nil, err
	}
	d := &Device{name: name, e: e}
	d.async.start(e)
	registry.devs = append(registry.devs, d)
	registry.changed()
	return d, nil
}

// nameFor returns the name a new device asking for want gets: want, unless
// an open device has it (ErrInvalidArgument), or for "" the first of
// goverbs0, goverbs1, … that none has. r must be held.
func (r *deviceRegistry) nameFor(want string) (string, error) {
	if want != "" {
		if r.named(want) != nil {
			return "", errorf("open device", "%w: name %q is in use by an open device (Devices)", ErrInvalidArgument, want)
		}
		return want, nil
	}
	for i := 0; ; i++ {
		if name := fmt.Sprintf("goverbs%d", i); r.named(name) == nil {
			return name, nil
		}
	}
}

// named returns the open device called name, or nil. r must be held.
func (r *deviceRegistry) named(name string) *Device {
	for _, d := range r.devs {
		if d.name == name {
			return d
		}
	}
	return nil
}

// Devices returns the devices open in this process (ibv_get_device_list).
func Devices() []*Device {
	registry.Lock()
	defer registry.Unlock()
	return append([]*Device(nil), registry.devs...)
}

// Name returns the device name.
func (d *Device) Name() string { return d.name }

// Close stops the device and releases its socket (ibv_close_device).
// Outstanding work requests complete with WCWRFlushErr; a CQ returns them
// and then ErrClosed. Closing it again returns nil.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	registry.Lock()
	for i, x := range registry.devs {
		if x == d {
			registry.devs = append(registry.devs[:i], registry.devs[i+1:]...)
			registry.changed()
			break
		}
	}
	registry.Unlock()
	err := d.e.Close()
	<-d.async.done
	if err != nil {
		return errorf("close device", "%s: %w", d.name, err)
	}
	return nil
}

// Addr returns the device's IP address and UDP port.
func (d *Device) Addr() netip.AddrPort { return d.e.LocalAddr() }

// Counters returns a snapshot of the device's counters; Counter values
// index it and name themselves like rxe's hw_counters.
func (d *Device) Counters() Counters { return Counters(d.e.Counters()) }

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (d *Device) AllocPD() (*PD, error) {
	id, err := d.e.AllocPD()
	if err != nil {
		return nil, errorf("alloc PD", "device %s: %w", d.name, err)
	}
	return &PD{dev: d, id: id}, nil
}

// CreateCQ creates a completion queue with room for at least cqe
// completions, 1..DeviceAttr.MaxCQE (ibv_create_cq).
func (d *Device) CreateCQ(cqe int) (*CQ, error) {
	c, err := d.e.CreateCQ(cqe)
	if err != nil {
		return nil, errorf("create CQ", "device %s: %w", d.name, err)
	}
	cq := &CQ{dev: d, c: c}
	d.async.add(c, cq)
	return cq, nil
}

// ParseAddr parses a device address written "IP" or "IP:port" (IPv6 as
// "[IP]:port"); without a port it is the RoCEv2 port 4791.
func ParseAddr(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, errorf("parse address", "%w: invalid device address %q: want IP or IP:port", ErrInvalidArgument, s)
	}
	return netip.AddrPortFrom(a, 4791), nil
}
