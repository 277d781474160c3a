//go:build linux

package conn

import (
	"encoding/binary"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux UDPBind sends with its own sendmmsg: x/net's WriteBatch takes
// one buffer list per datagram and no per-message segment size, while a
// GSO run is one msghdr gathering many datagrams (an iovec for each of
// their parts, so the packets are not copied) with a UDP_SEGMENT control
// message.

// sendIovecs bounds the iovecs of one sendmmsg over all its runs: up to
// three per datagram (Buf, Body, Tail).
const sendIovecs = 1024

// gsoCmsgSpace is the room of one UDP_SEGMENT control message (a u16).
var gsoCmsgSpace = unix.CmsgSpace(2)

// putGSOCmsg writes a UDP_SEGMENT control message of segment size size
// into c, gsoCmsgSpace bytes.
func putGSOCmsg(c []byte, size uint16) {
	ch := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
	ch.Level, ch.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	ch.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(c[unix.CmsgLen(0):], size)
}

// sendScratch is the sendmmsg state of a UDPBind, reused by every Send.
type sendScratch struct {
	hs    []mmsghdr
	iovs  []unix.Iovec
	names [][unix.SizeofSockaddrInet6]byte
	cmsgs []byte // gsoCmsgSpace per msghdr
	segs  []int  // segs[i]: datagrams in msghdr i

	// Arguments and results of the call made inside the socket's Write.
	f     *flow // the flow the msghdrs go by, nil for the bind's socket
	k     int
	n     int
	errno unix.Errno
	fn    func(fd uintptr) bool // bound once so Send allocates no closure

	zones map[string]uint32 // IPv6 zone name -> scope id
}

func (s *sendScratch) init(size int) {
	s.hs = make([]mmsghdr, size)
	s.iovs = make([]unix.Iovec, sendIovecs)
	s.names = make([][unix.SizeofSockaddrInet6]byte, size)
	s.cmsgs = make([]byte, size*gsoCmsgSpace)
	s.segs = make([]int, size)
	for i := range s.hs {
		h := &s.hs[i].hdr
		h.Name = &s.names[i][0]
	}
	s.fn = s.sendmmsg
}

// send sends msgs in rounds of one sendmmsg each and returns how many
// datagrams went out.
func (s *sendScratch) send(b *UDPBind, msgs []Message) (int, error) {
	sent := 0
	for sent < len(msgs) {
		k, v, perr := s.pack(b, msgs[sent:])
		n := 0
		var err error
		if k > 0 {
			n, err = s.write(b, k)
		}
		if f := s.f; f != nil {
			// A call that sent fewer than k stopped at a full socket
			// buffer, before the kernel gave the next datagram an ID,
			// or at an error, which the next round meets again. A
			// call that failed may have used an ID: probe before the
			// next send; so does a flow due a periodic one.
			f.next.Add(uint32(n))
			f.sends += uint32(n)
			if err != nil || f.sends >= recheckSends {
				f.stale = true
			}
		}
		for i := range v {
			s.iovs[i].Base = nil // the bind must not keep the caller's buffers
		}
		for _, c := range s.segs[:n] {
			sent += c
		}
		if err != nil {
			// A failed call sent nothing: the error is the first
			// msghdr's. If it was a GSO run the kernel would not
			// segment, stop coalescing and have the rest replanned.
			if s.segs[0] > 1 && (err == unix.EIO || err == unix.EINVAL) {
				b.gso.Store(false)
				return sent, ErrReplan
			}
			err = os.NewSyscallError("sendmmsg", err)
		}
		if err := roundErr(k, n, err, perr); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// pack fills msghdrs from msgs, one per GSO run or lone datagram, until
// the scratch is full or the next datagram goes by another socket (the
// bind's or a flow's, s.f), and returns the msghdrs and iovecs used. It
// stops before a datagram it cannot send: an unreachable address, or a
// plan the bind no longer follows (ErrReplan); that error comes with the
// counts.
func (s *sendScratch) pack(b *UDPBind, msgs []Message) (k, v int, err error) {
	gso := b.gso.Load()
	if len(msgs) > 0 {
		if s.f, err = s.flow(b, msgs[0].Flow); err != nil {
			return 0, 0, err
		}
	}
	for i := 0; i < len(msgs) && k < len(s.hs); {
		m := &msgs[i]
		if m.Flow != msgs[0].Flow {
			break
		}
		a, err := b.destination(m.Addr)
		if err != nil {
			return k, v, err
		}
		var first uint16 // the ID this send's datagram gets
		if s.f != nil {
			if m.Addr != s.f.dst {
				return k, v, errFlowAddr
			}
			first = uint16(s.f.next.Load()) + uint16(k)
		}
		// A run goes out as one only as planned; a lone datagram gets
		// the send's ID, so another planned ID means the plan is stale,
		// as is a flow's datagram that was not planned.
		run := 1
		if m.HasIPID {
			if r := runLen(msgs[i:]); gso && r > 1 && b.runPlanned(msgs[i:i+r], first) {
				run = r
			}
			if run == 1 && m.IPID != b.segmentID(first, 0) {
				return k, v, ErrReplan
			}
		} else if s.f != nil && !b.is6 {
			return k, v, ErrReplan
		}
		if v+3*run > len(s.iovs) {
			break
		}
		h := &s.hs[k].hdr
		h.Namelen = 0 // a flow's socket is connected
		if s.f == nil {
			h.Namelen = s.sockaddr(k, a, m.Addr.Port(), b.is6)
		}
		h.Iov = &s.iovs[v]
		h.Control, h.Controllen = nil, 0
		if run > 1 {
			c := s.cmsgs[k*gsoCmsgSpace : (k+1)*gsoCmsgSpace]
			putGSOCmsg(c, uint16(m.Size()))
			h.Control = &c[0]
			h.SetControllen(gsoCmsgSpace)
		}
		n := 0
		for j := range run {
			n += s.gather(v+n, &msgs[i+j])
		}
		h.SetIovlen(n) // 0 for an empty datagram
		s.segs[k] = run
		k++
		v += n
		i += run
	}
	return k, v, nil
}

// flow returns flow i, nil for the bind's socket (0), probing it first if
// its count went stale.
func (s *sendScratch) flow(b *UDPBind, i int) (*flow, error) {
	if i == 0 {
		return nil, nil
	}
	f := b.fl.get(i)
	if f == nil {
		return nil, errNoFlow
	}
	if f.stale {
		if err := b.recalibrate(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// gather points the iovecs from v on at m's non-empty parts and returns
// how many it used. (The kernel cuts a GSO run into segments by length,
// whatever the iovecs, so a datagram may span several.)
func (s *sendScratch) gather(v int, m *Message) int {
	n := 0
	for _, part := range [...][]byte{m.Buf, m.Body, m.Tail} {
		if len(part) > 0 {
			iov := &s.iovs[v+n]
			iov.Base = &part[0]
			iov.SetLen(len(part))
			n++
		}
	}
	return n
}

// sockaddr writes the sockaddr of a:port into name slot i and returns its
// length.
func (s *sendScratch) sockaddr(i int, a netip.Addr, port uint16, is6 bool) uint32 {
	sa := s.names[i][:]
	if !is6 {
		binary.NativeEndian.PutUint16(sa[0:2], unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:4], port)
		*(*[4]byte)(sa[4:8]) = a.As4()
		clear(sa[8:16])
		return unix.SizeofSockaddrInet4
	}
	binary.NativeEndian.PutUint16(sa[0:2], unix.AF_INET6)
	binary.BigEndian.PutUint16(sa[2:4], port)
	clear(sa[4:8]) // flow info
	*(*[16]byte)(sa[8:24]) = a.As16()
	binary.NativeEndian.PutUint32(sa[24:28], s.scope(a.Zone()))
	return unix.SizeofSockaddrInet6
}

// scope returns the scope id of an IPv6 zone (zoneID; 0 for one it cannot
// resolve), caching the answer: the interface table lookup allocates.
func (s *sendScratch) scope(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if id, ok := s.zones[zone]; ok {
		return id
	}
	id, _ := zoneID(zone)
	if s.zones == nil {
		s.zones = make(map[string]uint32)
	}
	s.zones[zone] = id
	return id
}

// write sends the first k msghdrs and returns how many went out, waiting
// in the runtime poller while the socket buffer is full.
func (s *sendScratch) write(b *UDPBind, k int) (int, error) {
	s.k, s.n, s.errno = k, 0, 0
	var err error
	if s.f != nil {
		err = b.sock.WriteFD(s.f.fd, s.fn)
	} else {
		err = b.sock.Write(s.fn)
	}
	if err != nil {
		return 0, err
	}
	if s.errno != 0 {
		return 0, s.errno
	}
	return s.n, nil
}

// sendmmsg runs inside the socket's Write on the non-blocking socket; returning
// false on EAGAIN parks the goroutine until the socket is writable. The
// call is raw, as recvmmsg's is and for the same reason: it never sleeps.
func (s *sendScratch) sendmmsg(fd uintptr) bool {
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd,
			uintptr(unsafe.Pointer(&s.hs[0])), uintptr(s.k), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.ECONNREFUSED:
			// A flow's socket is connected, so an ICMP port
			// unreachable from its peer (a device that was closed)
			// fails the next send, which sent nothing; the bind's own
			// socket never reports one (doc/design.md §3). Send again.
			continue
		case unix.EAGAIN:
			return false
		}
		s.n, s.errno = int(n), e
		if e != 0 {
			s.n = 0
		}
		return true
	}
}
