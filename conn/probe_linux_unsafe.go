//go:build linux

package conn

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeIO is what a flow's probe sends with and reads the kernel's echo
// into, made once per bind with its probe socket, so that a probe
// allocates nothing: one comes every recheckSends sends of a flow, and at
// every loss an RC QP sees. Used under sendMu.
type probeIO struct {
	to   unix.RawSockaddrInet4 // the probe socket
	out  [2 * probeSize]byte   // a probe's payload, zeros
	oob  []byte                // UDP_SEGMENT for a GSO probe
	echo [256]byte             // the echoed frame
	ctl  [512]byte             // the echo's timestamps
	hdr  unix.Msghdr
	iov  unix.Iovec
}

func newProbeIO(at netip.AddrPort) *probeIO {
	p := &probeIO{oob: make([]byte, gsoCmsgSpace)}
	p.to.Family = unix.AF_INET
	p.to.Addr = at.Addr().Unmap().As4()
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&p.to.Port))[:], at.Port())
	putGSOCmsg(p.oob, probeSize)
	return p
}

// send sends segs probe datagrams from fd to the probe socket, as one GSO
// send if more than one.
func (p *probeIO) send(fd, segs int) unix.Errno {
	p.hdr = unix.Msghdr{}
	p.hdr.Name = (*byte)(unsafe.Pointer(&p.to))
	p.hdr.Namelen = unix.SizeofSockaddrInet4
	p.iov.Base = &p.out[0]
	p.iov.SetLen(segs * probeSize)
	p.hdr.Iov = &p.iov
	p.hdr.SetIovlen(1)
	if segs > 1 {
		p.hdr.Control = &p.oob[0]
		p.hdr.SetControllen(len(p.oob))
	}
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.hdr)), 0)
	return e
}

// readEcho takes the next transmitted frame fd's error queue holds, headers
// and all, and returns its length; EAGAIN when none is there yet.
func (p *probeIO) readEcho(fd int) (int, unix.Errno) {
	p.hdr = unix.Msghdr{}
	p.iov.Base = &p.echo[0]
	p.iov.SetLen(len(p.echo))
	p.hdr.Iov = &p.iov
	p.hdr.SetIovlen(1)
	p.hdr.Control = &p.ctl[0]
	p.hdr.SetControllen(len(p.ctl))
	n, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.hdr)), unix.MSG_ERRQUEUE)
	return int(n), e
}

// drain empties the probe socket fd of the probes that reached it.
func (p *probeIO) drain(fd int) {
	for {
		_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p.echo[0])), uintptr(len(p.echo)), 0, 0, 0)
		if e != 0 && e != unix.EINTR {
			return
		}
	}
}
