// Package oob is the out-of-band TCP connection over which the C RDMA
// tools (ibv_rc_pingpong, perftest) swap their QP addresses before any
// RDMA traffic, and the goverbs device address derived from it.
package oob

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/verbs"
)

// Connect dials host:port as a client; with host "" it listens on every
// address as the server, calls listening (if set) once it does, and
// accepts one client. The error texts are the C tools'.
func Connect(host string, port int, listening func()) (net.Conn, error) {
	p := strconv.Itoa(port)
	if host != "" {
		c, err := net.Dial("tcp", net.JoinHostPort(host, p))
		if err != nil {
			return nil, fmt.Errorf("Couldn't connect to %s:%d: %w", host, port, err)
		}
		return c, nil
	}
	ln, err := net.Listen("tcp", ":"+p)
	if err != nil {
		return nil, fmt.Errorf("Couldn't listen to port %d: %w", port, err)
	}
	defer ln.Close()
	if listening != nil {
		listening()
	}
	c, err := ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("accept() failed: %w", err)
	}
	return c, nil
}

// LinkMTU gives the tools' devices an active MTU of 4096, the most RoCE
// allows; the tools then use the smaller of both sides' MTUs or -m.
const LinkMTU = 4096 + 80

// ActiveMTU is the active MTU LinkMTU gives a device: the link's less 80
// bytes of headers, as rxe derives it.
const ActiveMTU = LinkMTU - 80

// BusyPoll is how long the devices of the tools that spin on their CQs
// (the latency tests, ibv_rc_pingpong without -e) poll their sockets
// after traffic (verbs.DeviceConfig.BusyPoll). A hardware NIC answers
// while its host spins; a software NIC needs its receive loop awake for
// that: goverbs' ib_send_lat on loopback measured 13 µs typical with it
// and 66 µs without on this project's 2-core machine.
const BusyPoll = 50 * time.Microsecond

// OpenDevice opens a tool's device named name on the RoCE address addr
// (see DeviceAddr), its receive loop polling for busyPoll after traffic.
// A taken address usually means the peer runs on the same host with the
// same address, which the error says how to avoid.
func OpenDevice(name string, addr netip.AddrPort, busyPoll time.Duration) (*verbs.Device, error) {
	d, err := verbs.OpenDevice(verbs.DeviceConfig{Name: name, Addr: addr, LinkMTU: LinkMTU, BusyPoll: busyPoll})
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("Couldn't get context for the device: %w (is the peer on this host? %s)", err, oneHost)
	case err != nil:
		return nil, fmt.Errorf("Couldn't get context for the device: %w", err)
	}
	return d, nil
}

// oneHost says how two tools on one host keep their devices apart.
const oneHost = "Each side needs its own address: connect to 127.0.0.2 instead of 127.0.0.1, or give one side --addr"

// ReadFull reads exactly len(b) bytes from the peer over r (a C tool
// writes each message with one write, but TCP may deliver it in pieces).
// A peer that closed the connection is explained (peerGone).
func ReadFull(r io.Reader, b []byte) error {
	if _, err := io.ReadFull(r, b); err != nil {
		return peerGone(r, err)
	}
	return nil
}

// ReadFirst is ReadFull for the first message of the peer, which fails
// if none came within FirstReply. A connected peer answers the first
// message at once; one that does not is most likely another tool:
// ibv_rc_pingpong and perftest each wait for a message of their own
// length, and against each other both would wait for ever, as the C
// tools do. Later reads have no limit (a bandwidth server waits in a
// handshake for the whole run).
func ReadFirst(r io.Reader, b []byte) error {
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
		if err := d.SetReadDeadline(time.Now().Add(FirstReply)); err == nil {
			defer d.SetReadDeadline(time.Time{})
		}
	}
	err := ReadFull(r, b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("no message from the peer in %v: is it the same tool? (%w)", FirstReply, err)
	}
	return err
}

// FirstReply is how long ReadFirst waits.
var FirstReply = 30 * time.Second

// peerGone explains err, a read from the peer over r that failed: a peer
// that closed the connection (EOF) has said why in its own output, and
// when both ends are on one address, the usual why is the device address
// both sides wanted (OpenDevice), which only one could take.
func peerGone(r io.Reader, err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	if c, ok := r.(net.Conn); ok && sameAddr(c.LocalAddr(), c.RemoteAddr()) {
		return fmt.Errorf("%w (the peer closed the connection: its output says why. %s)", err, oneHost)
	}
	return fmt.Errorf("%w (the peer closed the connection: its output says why)", err)
}

// sameAddr reports whether a and b are TCP addresses of one IP.
func sameAddr(a, b net.Addr) bool {
	x, ok1 := a.(*net.TCPAddr)
	y, ok2 := b.(*net.TCPAddr)
	return ok1 && ok2 && x.IP.Equal(y.IP)
}

// DeviceAddr is the RoCE address of a tool's device: addr ("IP" or
// "IP:port") when set, otherwise the local IP of the out-of-band
// connection c on UDP 4791, which is the address the peer reached.
func DeviceAddr(c net.Conn, addr string) (netip.AddrPort, error) {
	if addr != "" {
		return verbs.ParseAddr(addr)
	}
	return netip.AddrPortFrom(c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap(), 4791), nil
}

// ServerHost returns the host a tool connects to from its positional
// arguments: none makes it the server (""), one names the server. More
// are an error that says so, in one line, as the tools' other usage
// errors (toolflag).
func ServerHost(args []string) (string, error) {
	switch len(args) {
	case 0:
		return "", nil
	case 1:
		return args[0], nil
	}
	return "", fmt.Errorf("too many arguments: %q: give the server's host, or nothing to be the server", args)
}

// Release frees a tool's verbs objects in libibverbs' order, QPs before
// the MR before the device; nil QPs and MR are skipped. Errors are
// ignored: the tool is ending, with the error that ended it if any.
func Release(dev *verbs.Device, mr *verbs.MR, qps ...*verbs.QP) {
	for _, qp := range qps {
		if qp != nil {
			qp.Close()
		}
	}
	if mr != nil {
		mr.Close()
	}
	dev.Close()
}
