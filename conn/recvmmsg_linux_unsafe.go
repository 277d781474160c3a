//go:build linux

package conn

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux UDPBind receives with its own recvmmsg instead of x/net's
// ReadBatch: ReadBatch turns every source sockaddr into a fresh
// *net.UDPAddr (two allocations per datagram), which would break the
// zero-allocation budget of the receive path (STYLE rule 15). Here the
// sockaddrs land in reused scratch and are parsed straight into
// netip.AddrPort, which is a value. Sending has its own sendmmsg too
// (sendmmsg_linux_unsafe.go).

// mmsghdr is struct mmsghdr of <sys/socket.h>. Go lays it out as C does
// on every Linux ABI (msg_len follows the msghdr, padded to its alignment).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
}

// recvScratch is the recvmmsg state of a UDPBind, reused by every Recv.
type recvScratch struct {
	hs    []mmsghdr
	iovs  []unix.Iovec
	names [][unix.SizeofSockaddrInet6]byte
	trunc []bool // trunc[i]: datagram i did not fit its buffer (MSG_TRUNC)

	// Arguments and results of the call made inside the socket's Read.
	k      int
	wait   *pollWait    // the bind's: whether to poll an empty socket again
	closed *atomic.Bool // the bind's: Close ends the polling
	n      int
	errno  unix.Errno
	// gate is the bind's receive gate (SetRecvGate), let go of while
	// the call waits (open) and taken again before it receives.
	gate *sync.Mutex
	open bool
	// once makes an empty socket end the call with no datagrams instead
	// of waiting (TryRecvCoalesced's scratch); dry says its last call
	// found none.
	once, dry bool
	// fn is the bound method passed to the socket's Read, made once so that
	// each Recv does not allocate a closure.
	fn func(fd uintptr) bool

	zones map[uint32]string // IPv6 scope id -> zone name, for link-local sources

	gro *groState // set when the socket coalesces receives (UDP_GRO)
}

func (r *recvScratch) init(size int) {
	r.hs = make([]mmsghdr, size)
	r.iovs = make([]unix.Iovec, size)
	r.names = make([][unix.SizeofSockaddrInet6]byte, size)
	r.trunc = make([]bool, size)
	for i := range r.hs {
		h := &r.hs[i].hdr
		h.Name = &r.names[i][0]
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
	}
	r.fn = r.recvmmsg
}

// read receives up to len(msgs) datagrams into the msgs' buffers, fills
// N and Addr, marks truncated ones in r.trunc and returns the count. It
// blocks in the runtime poller until the socket is readable.
func (r *recvScratch) read(b *UDPBind, msgs []Message) (int, error) {
	if r.gro != nil {
		return r.readGRO(b, msgs)
	}
	for i := range msgs {
		buf := msgs[i].Buf
		iov := &r.iovs[i]
		iov.Base = nil
		if len(buf) > 0 {
			iov.Base = &buf[0]
		}
		iov.SetLen(len(buf))
		r.hs[i].hdr.Namelen = unix.SizeofSockaddrInet6
		r.hs[i].hdr.Flags = 0
		r.hs[i].len = 0
	}
	err := r.call(b, len(msgs))
	// Let go of the caller's buffers: the bind must not keep them.
	for i := range msgs {
		r.iovs[i].Base = nil
	}
	if err != nil {
		return 0, err
	}
	for i := range r.n {
		m := &msgs[i]
		h := &r.hs[i]
		m.N = int(h.len)
		m.Addr = r.source(i)
		m.IPID, m.HasIPID, m.Seg = 0, false, 0
		r.trunc[i] = h.hdr.Flags&unix.MSG_TRUNC != 0
	}
	return r.n, nil
}

// call runs recvmmsg on the first k msghdrs, which the caller set up, and
// leaves the count in r.n. It blocks in the runtime poller until the
// socket is readable.
func (r *recvScratch) call(b *UDPBind, k int) error {
	r.k, r.n, r.errno = k, 0, 0
	r.wait, r.closed = &b.poll, &b.closed
	if !r.once {
		r.gate = b.gate.Load()
	}
	err := b.sock.Read(r.fn)
	r.closeGate() // a sleep that failed left it open
	if err != nil {
		return err
	}
	if r.errno != 0 {
		return os.NewSyscallError("recvmmsg", r.errno)
	}
	return nil
}

// recvmmsg runs inside the socket's Read on the non-blocking socket. On
// EAGAIN it polls again, yielding the processor between tries, for as
// long as r.wait says; then returning false has Read sleep until data
// arrives (or the socket is closed, which makes Read fail). The bind's
// receive gate, if it has one, it lets go of for the yields and the
// sleep, and takes back before the next try (SharedReceiver); a
// TryRecvCoalesced's scratch (once) returns at the first EAGAIN instead.
//
// A poll that follows an empty one asks for a single datagram: what it
// catches is usually alone (a ping-pong's answer), and recvmmsg would go
// on to look for a second datagram, a failed receive that costs as much
// as an empty poll (about 350 ns of the 590 ns one takes on this 2-core
// virtual machine) on the latency path. Whatever follows is taken by the
// next call, in a batch. ib_write_lat 8 B typical one-way, pinned, near
// mode, medians of 5: 6.03 → 5.76 µs; ib_write_bw 8 B and 64 KiB unchanged.
// That single datagram it asks of recvmsg (recvMsgs).
//
// The call is a raw one (RawSyscall6), without the runtime's
// entersyscall/exitsyscall, which let another thread take the processor
// during a call that may sleep: on the non-blocking socket none does, and
// the bookkeeping cost 70-90 ns of an empty poll's 560-590 ns on this
// machine, once per cycle of a busy-polling receive loop. The longest
// call, a batch of recvCoalescedBatch 64 KiB datagrams, copies 1 MiB:
// a stop of the world waits at most that long for it.
func (r *recvScratch) recvmmsg(fd uintptr) bool {
	k := r.k
	for {
		r.closeGate()
		n, e := recvMsgs(fd, r.hs[:k])
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if r.once {
				return true
			}
			poll := r.wait.empty(r.closed)
			r.openGate()
			if !poll {
				return false
			}
			runtime.Gosched()
			k = 1
			continue
		}
		r.n, r.errno = int(n), e
		if e != 0 {
			r.n = 0
		} else {
			r.wait.arrived()
		}
		return true
	}
}

// recvMsgs receives into the msghdrs of hs and returns how many it
// filled. One it asks of recvmsg, which the kernel serves with less than
// recvmmsg's loop around the same receive: two processes bouncing the RC
// pattern (a GSO pair to a GRO socket, BenchmarkSyscallPingPong's
// rc-pair) 0.1–0.17 µs faster one-way in three series on this machine;
// ib_write_lat 8 B typical one-way lower in 9 of 10 alternated pairs, by
// 0.12 µs (median); ib_write_bw 8 B unchanged.
func recvMsgs(fd uintptr, hs []mmsghdr) (uintptr, unix.Errno) {
	if len(hs) == 1 {
		n, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&hs[0].hdr)), 0)
		if e != 0 {
			return 0, e
		}
		hs[0].len = uint32(n)
		return 1, 0
	}
	n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), 0, 0, 0)
	return n, e
}

// openGate lets go of the bind's receive gate, if it has one, for a wait;
// closeGate takes it back.
func (r *recvScratch) openGate() {
	if r.gate != nil && !r.open {
		r.gate.Unlock()
		r.open = true
	}
}

func (r *recvScratch) closeGate() {
	if r.open {
		r.gate.Lock()
		r.open = false
	}
}

// source parses the sockaddr recvmmsg wrote for datagram i. IPv4-mapped
// sources (a dual-stack socket) come back as plain IPv4.
func (r *recvScratch) source(i int) netip.AddrPort {
	sa := r.names[i][:r.hs[i].hdr.Namelen]
	if len(sa) < 4 {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(sa[2:4])
	switch binary.NativeEndian.Uint16(sa[0:2]) {
	case unix.AF_INET:
		if len(sa) < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port)
	case unix.AF_INET6:
		if len(sa) < unix.SizeofSockaddrInet6 {
			return netip.AddrPort{}
		}
		a := netip.AddrFrom16([16]byte(sa[8:24])).Unmap()
		if scope := binary.NativeEndian.Uint32(sa[24:28]); scope != 0 && a.Is6() {
			a = a.WithZone(r.zone(scope))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}

// zone names an IPv6 scope id, caching the answer: only link-local
// sources have one, and the interface table lookup allocates.
func (r *recvScratch) zone(scope uint32) string {
	if z, ok := r.zones[scope]; ok {
		return z
	}
	z := strconv.FormatUint(uint64(scope), 10)
	if ifi, err := net.InterfaceByIndex(int(scope)); err == nil {
		z = ifi.Name
	}
	if r.zones == nil {
		r.zones = make(map[uint32]string)
	}
	r.zones[scope] = z
	return z
}
