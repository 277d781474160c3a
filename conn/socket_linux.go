//go:build linux

package conn

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// socket is a UDPBind's UDP socket on Linux: a non-blocking descriptor
// of its own, which the Go runtime's poller does not watch, so that a
// datagram arriving while the bind polls wakes nobody. A socket in an
// epoll set (every net.UDPConn is in the runtime's) has the kernel run
// the epoll callback on every datagram queued to it and on every send
// buffer freed, whether or not anybody sleeps: on loopback the sender's
// system call pays for it (ib_write_lat 8 B typical one-way, pinned,
// near mode, medians of 5: 6.2 → 5.9 µs without the registration).
//
// Only a Recv or Send that must sleep registers the socket, in an epoll
// instance of its own (waiter) that the runtime poller watches in turn,
// and takes it out again when it wakes.
//
// For the sendmmsg and recvmmsg code, Read and Write call f until it
// reports done, sleeping in between until the socket is readable or
// writable, as those of a syscall.RawConn do. The bind calls Read only under
// recvMu, and Write and everything else on the descriptor only under
// sendMu (or before it is shared), which is what makes close safe
// (UDPBind.Close).
type socket struct {
	fd     int
	rd, wr waiter
}

// openSocket opens a non-blocking UDP socket bound to laddr (IPv4, or
// IPv6 only if is6) and returns it with the address it is bound to.
func openSocket(laddr netip.AddrPort, is6 bool) (*socket, netip.AddrPort, error) {
	s, local, err := openSocketBare(laddr, is6)
	if err != nil {
		return nil, laddr, err
	}
	if err := s.initWaiters(); err != nil {
		return nil, laddr, err
	}
	return s, local, nil
}

// openSocketBare is openSocket without the waiters, for a socket that
// never sleeps on its own: a flow's, whose sends wait with the bind's
// (socket.WriteFD), and the probe socket (flow_linux.go).
func openSocketBare(laddr netip.AddrPort, is6 bool) (*socket, netip.AddrPort, error) {
	family := unix.AF_INET
	if is6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, laddr, os.NewSyscallError("socket", err)
	}
	s := &socket{fd: fd}
	local, err := s.bind(laddr, is6)
	if err != nil {
		unix.Close(fd)
		return nil, laddr, err
	}
	return s, local, nil
}

// initWaiters readies the socket's waiters; on failure it closes the
// socket.
func (s *socket) initWaiters() error {
	err := s.rd.init(unix.EPOLLIN)
	if err == nil {
		err = s.wr.init(unix.EPOLLOUT)
	}
	if err != nil {
		s.wake()
		s.close()
	}
	return err
}

// bind binds the socket to laddr and returns the address it got (the
// port, if laddr's is 0).
func (s *socket) bind(laddr netip.AddrPort, is6 bool) (netip.AddrPort, error) {
	if is6 {
		// A v6 socket takes v6 only, as net.ListenUDP("udp6") does.
		if err := unix.SetsockoptInt(s.fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return laddr, os.NewSyscallError("setsockopt IPV6_V6ONLY", err)
		}
	}
	sa, err := sockaddrOf(laddr, is6)
	if err != nil {
		return laddr, err
	}
	if err := unix.Bind(s.fd, sa); err != nil {
		return laddr, os.NewSyscallError("bind", err)
	}
	got, err := unix.Getsockname(s.fd)
	if err != nil {
		return laddr, os.NewSyscallError("getsockname", err)
	}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).WithZone(laddr.Addr().Zone()), uint16(a.Port)), nil
	}
	return laddr, errors.New("getsockname: unexpected address family")
}

// sockaddrOf returns a as a socket of the family is6 names takes it
// (bind, connect, a probe's destination).
func sockaddrOf(a netip.AddrPort, is6 bool) (unix.Sockaddr, error) {
	if !is6 {
		return &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().Unmap().As4()}, nil
	}
	id, err := zoneID(a.Addr().Zone())
	if err != nil {
		return nil, err
	}
	return &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16(), ZoneId: id}, nil
}

// zoneID returns the interface index an IPv6 zone names: an interface
// name or, failing that, a number, as package net reads zones; 0 for
// none. Binding and sending (sendScratch.scope) both resolve zones here.
func zoneID(zone string) (uint32, error) {
	if zone == "" {
		return 0, nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err == nil {
		return uint32(ifi.Index), nil
	}
	if n, perr := strconv.ParseUint(zone, 10, 32); perr == nil {
		return uint32(n), nil
	}
	return 0, err
}

// Read calls f until it returns true, sleeping until the socket is
// readable whenever it returns false. It fails once the socket is woken
// for closing.
func (s *socket) Read(f func(fd uintptr) bool) error { return s.io(s.fd, f, &s.rd) }

// Write is Read for writability.
func (s *socket) Write(f func(fd uintptr) bool) error { return s.io(s.fd, f, &s.wr) }

// WriteFD is Write on another descriptor, a flow's, with the socket's
// waiter: the bind writes to one descriptor at a time (under sendMu).
func (s *socket) WriteFD(fd int, f func(fd uintptr) bool) error { return s.io(fd, f, &s.wr) }

func (s *socket) io(fd int, f func(fd uintptr) bool, w *waiter) error {
	for !f(uintptr(fd)) {
		if err := w.wait(fd); err != nil {
			return err
		}
	}
	return nil
}

// wake makes a Read or Write that sleeps, or will, fail with
// net.ErrClosed: the first step of closing.
func (s *socket) wake() {
	s.rd.close()
	s.wr.close()
}

// close closes the descriptor. The caller has woken the socket and made
// sure that no Read or Write runs.
func (s *socket) close() error {
	if err := unix.Close(s.fd); err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// waiter sleeps until the socket has its events: it adds the socket to an
// epoll instance of its own, which the runtime poller watches, waits for
// the instance to be readable, and takes the socket out again.
type waiter struct {
	ep     *os.File
	rc     syscall.RawConn // ep's
	events uint32          // EPOLLIN or EPOLLOUT
	closed atomic.Bool

	// The epoll_ctl call made inside ep's Control, and its result;
	// bound once so that a wait allocates nothing.
	op, fd int
	err    error
	ctlFn  func(ep uintptr)
	pollFn func(ep uintptr) bool
	evs    [1]unix.EpollEvent
}

func (w *waiter) init(events uint32) error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	// Non-blocking, so that os.NewFile has the runtime poller watch it.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("fcntl", err)
	}
	w.ep = os.NewFile(uintptr(fd), "epoll")
	if w.rc, err = w.ep.SyscallConn(); err != nil {
		return err
	}
	w.events = events
	w.ctlFn, w.pollFn = w.ctl, w.ready
	return nil
}

// wait returns when fd has the waiter's events, or with net.ErrClosed
// once the waiter is closed.
func (w *waiter) wait(fd int) error {
	if w.closed.Load() {
		return net.ErrClosed
	}
	w.op, w.fd = unix.EPOLL_CTL_ADD, fd
	if err := w.rc.Control(w.ctlFn); err != nil || w.err != nil {
		return w.fail(err, "epoll_ctl")
	}
	err := w.rc.Read(w.pollFn)
	w.op = unix.EPOLL_CTL_DEL
	if cerr := w.rc.Control(w.ctlFn); err == nil && (cerr != nil || w.err != nil) {
		return w.fail(cerr, "epoll_ctl")
	}
	return w.fail(err, "epoll_wait")
}

// fail turns what a step of wait returned into its error: net.ErrClosed
// once the waiter is closed (its file's calls then fail too).
func (w *waiter) fail(err error, call string) error {
	switch {
	case w.closed.Load():
		return net.ErrClosed
	case err != nil:
		return err
	case w.err != nil:
		return os.NewSyscallError(call, w.err)
	}
	return nil
}

func (w *waiter) ctl(ep uintptr) {
	ev := unix.EpollEvent{Events: w.events, Fd: int32(w.fd)}
	w.err = unix.EpollCtl(int(ep), w.op, w.fd, &ev)
}

// ready reports whether the epoll instance has an event; an error counts
// as one, so that the caller's call on the socket meets it.
func (w *waiter) ready(ep uintptr) bool {
	n, err := unix.EpollWait(int(ep), w.evs[:], 0)
	return n > 0 || (err != nil && err != unix.EINTR)
}

// close wakes a wait and fails later ones.
func (w *waiter) close() {
	w.closed.Store(true)
	if w.ep != nil {
		w.ep.Close()
	}
}
