// Package oob is the out-of-band TCP connection over which the C RDMA
// tools (ibv_rc_pingpong, perftest) swap their QP addresses before any
// RDMA traffic, and the goverbs device address derived from it.
package oob

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

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

// DeviceAddr is the RoCE address of a tool's device: addr ("IP" or
// "IP:port") when set, otherwise the local IP of the out-of-band
// connection c on UDP 4791, which is the address the peer reached.
func DeviceAddr(c net.Conn, addr string) (netip.AddrPort, error) {
	if addr != "" {
		return verbs.ParseAddr(addr)
	}
	return netip.AddrPortFrom(c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap(), 4791), nil
}
