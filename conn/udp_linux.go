package conn

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// open opens the bind's socket (socket_linux.go).
func (b *UDPBind) open(laddr netip.AddrPort) error {
	s, local, err := openSocket(laddr, b.is6)
	if err != nil {
		return err
	}
	b.sock, b.local = s, local
	return nil
}

// setTrafficClass sets the IPv4 TOS or IPv6 traffic class byte.
func (s *socket) setTrafficClass(is6 bool, v int) error {
	level, opt, name := unix.IPPROTO_IP, unix.IP_TOS, "setsockopt IP_TOS"
	if is6 {
		level, opt, name = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, "setsockopt IPV6_TCLASS"
	}
	if err := unix.SetsockoptInt(s.fd, level, opt, v); err != nil {
		return os.NewSyscallError(name, err)
	}
	return nil
}

// setOptions makes the socket send unfragmentable datagrams and
// gives it large buffers.
//
// DF matters for more than path MTU: for a DF datagram on an unconnected
// socket Linux writes IPv4 Identification 0 (ip_select_ident_segs), and the
// RoCEv2 ICRC covers the IPv4 header with only TTL, TOS and checksum
// masked, so receivers that recompute it (rxe, hardware, our engine)
// assume 0. Failing to set it is therefore an error. IPv6 has no
// Identification in the fixed header; DONTFRAG keeps the kernel from
// fragmenting there too, as RoCE never fragments.
//
// The buffer sizes are best effort: the FORCE variants exceed
// net.core.[rw]mem_max but need CAP_NET_ADMIN; without it the plain
// variants are capped at the sysctl, and a failure costs only burst
// tolerance.
func (s *socket) setOptions(is6 bool) error {
	if is6 {
		if err := unix.SetsockoptInt(s.fd, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1); err != nil {
			return fmt.Errorf("setsockopt IPV6_DONTFRAG: %w", err)
		}
	} else if err := unix.SetsockoptInt(s.fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
		return fmt.Errorf("setsockopt IP_MTU_DISCOVER: %w", err)
	}
	setBuffer(s.fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF)
	setBuffer(s.fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF)
	return nil
}

// setBuffer raises one socket buffer to socketBufferSize, through the
// FORCE option when the process may use it. Errors are ignored on purpose
// (see socket.setOptions).
func setBuffer(s, force, plain int) {
	if unix.SetsockoptInt(s, unix.SOL_SOCKET, force, socketBufferSize) == nil {
		return
	}
	_ = unix.SetsockoptInt(s, unix.SOL_SOCKET, plain, socketBufferSize)
}

// enableOffload asks for UDP segmentation offload on the socket: GSO is
// there if the kernel knows the UDP_SEGMENT option (Linux 4.18), GRO if it
// accepts UDP_GRO (Linux 5.0). Whether the device can checksum GSO sends
// shows only when one fails (see sendScratch.send).
func (s *socket) enableOffload() (gso, gro bool) {
	_, err := unix.GetsockoptInt(s.fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
	gso = err == nil
	gro = unix.SetsockoptInt(s.fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	return gso, gro
}
