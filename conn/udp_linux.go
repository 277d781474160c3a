package conn

import (
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// open opens the bind's socket (socket_linux.go).
func (b *UDPBind) open(laddr netip.AddrPort) error {
	s, local, err := openSocket(laddr, b.is6)
	if err != nil {
		return err
	}
	b.sock, b.rc, b.local = s, s, local
	return nil
}

// setTrafficClass sets the IPv4 TOS or IPv6 traffic class byte.
func (b *UDPBind) setTrafficClass(v int) error {
	level, opt, name := unix.IPPROTO_IP, unix.IP_TOS, "setsockopt IP_TOS"
	if b.is6 {
		level, opt, name = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, "setsockopt IPV6_TCLASS"
	}
	var err error
	_ = b.rc.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), level, opt, v) })
	if err != nil {
		return os.NewSyscallError(name, err)
	}
	return nil
}

// setSocketOptions makes the socket send unfragmentable datagrams and
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
func setSocketOptions(rc syscall.RawConn, is6 bool) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		s := int(fd)
		if is6 {
			if e := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1); e != nil {
				serr = fmt.Errorf("setsockopt IPV6_DONTFRAG: %w", e)
				return
			}
		} else {
			if e := unix.SetsockoptInt(s, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); e != nil {
				serr = fmt.Errorf("setsockopt IP_MTU_DISCOVER: %w", e)
				return
			}
		}
		setBuffer(s, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF)
		setBuffer(s, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF)
	})
	if err != nil {
		return err
	}
	return serr
}

// setBuffer raises one socket buffer to socketBufferSize, through the
// FORCE option when the process may use it. Errors are ignored on purpose
// (see setSocketOptions).
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
func enableOffload(rc syscall.RawConn) (gso, gro bool) {
	_ = rc.Control(func(fd uintptr) {
		s := int(fd)
		_, err := unix.GetsockoptInt(s, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		gso = err == nil
		gro = unix.SetsockoptInt(s, unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	})
	return gso, gro
}
