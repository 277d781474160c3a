//go:build linux

package conn

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A flow is a socket of the bind's connected to one peer, which the bind
// sends to it from (FlowOpener). An unconnected socket has the kernel
// look the route up on every send; a connected one keeps it: ib_write_lat
// 8 B typical one-way, pinned, alternated pairs, near mode, 5.54 → 5.48
// µs, lower in 11 of 16, and 6.02 → 5.47, 7 of 10. Only sends use it: the
// peer's datagrams come to the bind's socket as before.
//
// The price is the IPv4 Identification, which the ICRC covers: Linux
// gives a connected socket's datagrams consecutive IDs from a random
// start (an unconnected DF socket's are all 0), one per datagram it
// sends, a GSO send counting one, whose segments number on from it. A flow
// learns the start by sending a probe to a socket of the bind's own and
// reading the ID off the copy of the probe the kernel echoes to a sender
// that asks for transmit timestamps (probe), and then counts. On
// opening, three probes check that rule on the running kernel — a lone
// datagram, a GSO pair, a lone datagram — and a kernel that numbers
// otherwise, or echoes no copy, gets no flows. A send that failed may
// have used an ID, so the flow probes again before its next, as it does
// when the caller suspects the count (RecheckFlow) and every recheckSends
// sends.
type flow struct {
	fd  int
	dst netip.AddrPort
	src netip.AddrPort // where its datagrams come from: the bind's address, a port of its own
	// next is the IPv4 ID of the flow's next datagram. Written under
	// sendMu, read by PlanIPIDs without it.
	next  atomic.Uint32
	stale bool   // a send failed: next is unknown until probed (under sendMu)
	sends uint32 // sends since the last probe (under sendMu)
}

// recheckSends is how many sends a flow makes between probes at most. A
// count gone wrong without a failed send (FlowOpener.RecheckFlow says
// how) loses a peer that checks the ICRC everything the flow sends until
// the next probe; an RC QP rechecks when it sees loss, but a UC QP has no
// ACKs to see it by, and this bounds what it loses. A probe costs two
// system calls. A variable so that tests can lower it.
var recheckSends uint32 = 1 << 16

// flowTable is a UDPBind's flows.
type flowTable struct {
	list    atomic.Pointer[[]*flow] // replaced, never changed, under sendMu
	probe   int                     // the socket probes go to, once one went (under sendMu)
	probeAt netip.AddrPort          // its address
	pio     *probeIO                // what probes send and read with
	tos     int                     // the TOS byte every flow sends with (SetECN)
	off     bool                    // the kernel numbers otherwise: no flows
}

// get returns flow i (1-based), nil for 0 or one that is not open.
func (t *flowTable) get(i int) *flow {
	l := t.list.Load()
	if l == nil || i <= 0 || i > len(*l) {
		return nil
	}
	return (*l)[i-1]
}

// flowNext returns the IPv4 ID flow i sends its next datagram with.
func (b *UDPBind) flowNext(i int) uint16 {
	if f := b.fl.get(i); f != nil {
		return uint16(f.next.Load())
	}
	return 0
}

// OpenFlow implements FlowOpener. It opens flows only for a bind on the
// RoCEv2 port: a peer knows a device on that port by its address alone,
// as it knows rxe, which sends from a port per QP (doc/protocol.md §1.2),
// while a device on another port is known by the port too. It declines
// past maxFlows peers, and when a socket cannot be made or the kernel
// numbers IDs otherwise than the flow counts them, and for a bind on a
// wildcard address, whose flows' source address the route would pick.
func (b *UDPBind) OpenFlow(dst netip.AddrPort) (int, netip.AddrPort) {
	if b.local.Port() != RoCEv2Port || b.local.Addr().IsUnspecified() {
		return 0, b.local
	}
	if _, err := b.destination(dst); err != nil {
		return 0, b.local
	}
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	if b.closed.Load() || b.fl.off {
		return 0, b.local
	}
	var list []*flow
	if l := b.fl.list.Load(); l != nil {
		list = *l
	}
	for i, f := range list {
		if f.dst == dst {
			return i + 1, f.src
		}
	}
	if len(list) == maxFlows {
		return 0, b.local
	}
	f, err := b.dial(dst)
	if err != nil {
		return 0, b.local
	}
	if !b.is6 {
		if err := b.checkNumbering(f); err != nil {
			unix.Close(f.fd)
			b.fl.off = errors.Is(err, errNumbering)
			return 0, b.local
		}
	}
	list = append(list[:len(list):len(list)], f)
	b.fl.list.Store(&list)
	return len(list), f.src
}

// dial opens a flow's socket: the bind's options and address, an
// ephemeral port, connected to dst.
func (b *UDPBind) dial(dst netip.AddrPort) (*flow, error) {
	s, src, err := openSocketBare(netip.AddrPortFrom(b.local.Addr(), 0), b.is6)
	if err != nil {
		return nil, err
	}
	err = s.setOptions(b.is6)
	if err == nil && b.fl.tos != 0 {
		err = s.setTrafficClass(b.is6, b.fl.tos)
	}
	if err == nil {
		var sa unix.Sockaddr
		if sa, err = sockaddrOf(dst, b.is6); err == nil {
			err = unix.Connect(s.fd, sa)
		}
	}
	if err != nil {
		unix.Close(s.fd)
		return nil, err
	}
	return &flow{fd: s.fd, dst: dst, src: src}, nil
}

// errNumbering refuses flows on a kernel whose IPv4 IDs do not follow the
// rule a flow counts by.
var errNumbering = errors.New("conn: the kernel numbers a connected socket's IPv4 IDs otherwise")

// checkNumbering probes a new IPv4 flow three times and checks the IDs
// against the rule it counts by (see flow), leaving next set.
func (b *UDPBind) checkNumbering(f *flow) error {
	first, err := b.probe(f, 1)
	if err != nil {
		return err
	}
	want := first + 1
	if b.gso.Load() {
		pair, err := b.probe(f, 2)
		if err != nil {
			return err
		}
		if pair != want {
			return errNumbering
		}
		want++
	}
	last, err := b.probe(f, 1)
	if err != nil {
		return err
	}
	if last != want {
		return errNumbering
	}
	f.next.Store(uint32(last + 1))
	f.sends = 0
	return nil
}

// RecheckFlow implements FlowOpener: flow i probes before its next send.
func (b *UDPBind) RecheckFlow(i int) {
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	if f := b.fl.get(i); f != nil {
		f.stale = true
	}
}

// recalibrate probes a flow whose count went stale.
func (b *UDPBind) recalibrate(f *flow) error {
	if !b.is6 {
		id, err := b.probe(f, 1)
		if err != nil {
			return err
		}
		f.next.Store(uint32(id + 1))
	}
	f.stale, f.sends = false, 0
	return nil
}

// probeSize is the size of a probe datagram, or of each of a GSO probe's.
const probeSize = 16

// probeWait bounds the wait for a probe's echo, which loopback gives
// before the send returns.
const probeWait = time.Second

// probe sends segs datagrams (one GSO send if more than one) from f to
// the bind's probe socket and returns the IPv4 ID the send carried. The
// receiver cannot see the ID, but the sender can: with SO_TIMESTAMPING on,
// the kernel hands the socket back a copy of each datagram it transmits,
// headers and all, with the transmit timestamp (on its error queue; the
// sysctl net.core.tstamp_allow_data, on by default, allows the copy).
func (b *UDPBind) probe(f *flow, segs int) (uint16, error) {
	if b.fl.probe == 0 {
		s, at, err := openSocketBare(netip.AddrPortFrom(b.local.Addr(), 0), false)
		if err != nil {
			return 0, err
		}
		b.fl.probe, b.fl.probeAt, b.fl.pio = s.fd, at, newProbeIO(at)
	}
	p := b.fl.pio
	const ts = unix.SOF_TIMESTAMPING_TX_SCHED | unix.SOF_TIMESTAMPING_SOFTWARE
	if err := unix.SetsockoptInt(f.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, ts); err != nil {
		return 0, os.NewSyscallError("setsockopt SO_TIMESTAMPING", err)
	}
	defer unix.SetsockoptInt(f.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, 0)
	if e := p.send(f.fd, segs); e != 0 {
		return 0, os.NewSyscallError("sendmsg", e)
	}
	defer p.drain(b.fl.probe)
	for deadline := time.Now().Add(probeWait); ; time.Sleep(time.Millisecond) {
		n, e := p.readEcho(f.fd)
		if e == 0 {
			if id, ok := sentID(p.echo[:n], f.src.Addr(), b.fl.probeAt.Addr()); ok {
				return id, nil
			}
			return 0, errNumbering
		}
		if e != unix.EAGAIN && e != unix.EINTR {
			return 0, os.NewSyscallError("recvmsg MSG_ERRQUEUE", e)
		}
		if time.Now().After(deadline) {
			return 0, errors.New("conn: no echo of a flow probe (SO_TIMESTAMPING)")
		}
	}
}

// sentID finds the IPv4 header of a datagram from src to dst in the echo
// of a transmitted frame (after the link header, whatever its length) and
// returns its Identification.
func sentID(frame []byte, src, dst netip.Addr) (uint16, bool) {
	s, d := src.As4(), dst.As4()
	for o := 0; o+20 <= len(frame); o++ {
		h := frame[o:]
		if h[0] == 0x45 && h[9] == unix.IPPROTO_UDP && [4]byte(h[12:16]) == s && [4]byte(h[16:20]) == d {
			return binary.BigEndian.Uint16(h[4:6]), true
		}
	}
	return 0, false
}

// closeFlows closes the flows' sockets and the probe socket. Called with
// sendMu held, as the bind closes.
func (b *UDPBind) closeFlows() {
	if l := b.fl.list.Load(); l != nil {
		for _, f := range *l {
			unix.Close(f.fd)
		}
	}
	if b.fl.probe != 0 {
		unix.Close(b.fl.probe)
	}
}

// setFlowsTrafficClass gives every flow, and those opened later, TOS
// byte v. Called with sendMu held.
func (b *UDPBind) setFlowsTrafficClass(v int) error {
	b.fl.tos = v
	if l := b.fl.list.Load(); l != nil {
		for _, f := range *l {
			if err := (&socket{fd: f.fd}).setTrafficClass(b.is6, v); err != nil {
				return err
			}
		}
	}
	return nil
}
