//go:build linux

package conn

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// With UDP_GRO on, the kernel may hand one recvmsg many datagrams of a
// flow laid end to end, all of one size but a shorter last, and says the
// size in a UDP_GRO control message. Such a buffer can be as large as a
// datagram (64 KiB) whatever the caller's buffers are, so Recv receives
// into buffers of the bind's and copies each datagram out into a Message
// of the caller's, handing out what did not fit at the next Recv without a
// system call. RecvCoalesced (CoalescedReceiver) saves that copy: the
// caller's buffers are 64 KiB and take the runs whole (the engine's
// receive loop).

const (
	// groBufSize holds the largest UDP datagram, coalesced or not.
	groBufSize = 1 << 16
	// groBuffers is how many coalesced buffers one recvmmsg fills: 16 hold
	// a thousand MTU-sized packets, more than the engine takes per call,
	// and still sixteen datagrams per call when nothing coalesces.
	groBuffers = 16
)

// groCmsgSpace is the room of one UDP_GRO control message (an int).
var groCmsgSpace = unix.CmsgSpace(4)

// groState is the coalesced receive of a recvScratch, and what of its last
// recvmmsg has not been handed out yet.
type groState struct {
	bufs  [][]byte
	cmsgs []byte // groCmsgSpace per buffer
	is6   bool

	// Datagram i of the last call: its length, segment size (its length
	// if not coalesced), source and truncation.
	size  []int
	seg   []int
	addr  []netip.AddrPort
	trunc []bool

	n    int // datagrams the last call received
	next int // the datagram being handed out
	off  int // its offset of the next segment
	idx  int // that segment's index
}

// initGRO readies r for coalesced receives; bufs gives it the buffers
// of its own that a plain Recv hands datagrams out of (readGRO), which
// RecvCoalesced does without.
func (r *recvScratch) initGRO(is6, bufs bool) {
	g := &groState{
		bufs:  make([][]byte, groBuffers),
		cmsgs: make([]byte, groBuffers*groCmsgSpace),
		is6:   is6,
		size:  make([]int, groBuffers),
		seg:   make([]int, groBuffers),
		addr:  make([]netip.AddrPort, groBuffers),
		trunc: make([]bool, groBuffers),
	}
	if bufs {
		for i := range g.bufs {
			g.bufs[i] = make([]byte, groBufSize)
		}
	}
	r.gro = g
}

func (r *recvScratch) groOn() bool { return r.gro != nil }

// readGRO is read with UDP_GRO on: it hands out the datagrams left from
// the last call, or receives more (blocking) when none are left, one per
// Message. A datagram larger than its Message's buffer is dropped and
// counted as truncated; every returned Message has r.trunc false.
func (r *recvScratch) readGRO(b *UDPBind, msgs []Message) (int, error) {
	g := r.gro
	if g.next == g.n {
		if err := r.recvGRO(b); err != nil {
			return 0, err
		}
	}
	w := 0
	for w < len(msgs) && g.next < g.n {
		i := g.next
		if g.trunc[i] {
			b.truncated.Add(1)
			g.next++
			continue
		}
		l := min(g.seg[i], g.size[i]-g.off)
		if m := &msgs[w]; l <= len(m.Buf) {
			m.N = copy(m.Buf, g.bufs[i][g.off:g.off+l])
			m.Addr = g.addr[i]
			m.IPID, m.HasIPID, m.Seg = 0, false, 0
			if !g.is6 {
				m.IPID = uint16(g.idx) // the ID a GSO send gave it (UDPBind.segmentID)
			}
			r.trunc[w] = false
			w++
		} else {
			b.truncated.Add(1)
		}
		g.off += l
		g.idx++
		if g.off >= g.size[i] {
			g.next, g.off, g.idx = g.next+1, 0, 0
		}
	}
	return w, nil
}

// recvGRO receives up to groBuffers datagrams into the bind's buffers.
func (r *recvScratch) recvGRO(b *UDPBind) error {
	g := r.gro
	for i := range groBuffers {
		r.setupGRO(i, g.bufs[i])
	}
	g.n, g.next, g.off, g.idx = 0, 0, 0, 0
	if err := r.call(b, groBuffers); err != nil {
		return err
	}
	for i := range r.n {
		g.size[i], g.seg[i] = r.sizeGRO(i)
		if g.seg[i] == 0 {
			g.seg[i] = max(g.size[i], 1) // alone, or empty
		}
		g.addr[i] = r.source(i)
		g.trunc[i] = r.hs[i].hdr.Flags&unix.MSG_TRUNC != 0
	}
	g.n = r.n
	return nil
}

// readCoalesced receives up to groBuffers datagrams, coalesced or not,
// straight into the msgs' buffers (conn.CoalescedReceiver): the one copy
// of the receive path is the kernel's. Datagrams a Recv left over are
// handed out first, one per Message. Without UDP_GRO it is read.
func (r *recvScratch) readCoalesced(b *UDPBind, msgs []Message) (int, error) {
	g := r.gro
	if g == nil {
		return r.read(b, msgs)
	}
	if g.next < g.n {
		return r.readGRO(b, msgs)
	}
	k := min(len(msgs), groBuffers)
	for i := range k {
		r.setupGRO(i, msgs[i].Buf)
	}
	err := r.call(b, k)
	for i := range k {
		r.iovs[i].Base = nil // the bind must not keep the caller's buffers
	}
	if err != nil {
		return 0, err
	}
	for i := range r.n {
		m := &msgs[i]
		m.N, m.Seg = r.sizeGRO(i)
		m.Addr = r.source(i)
		m.IPID, m.HasIPID = 0, false
		r.trunc[i] = r.hs[i].hdr.Flags&unix.MSG_TRUNC != 0
	}
	return r.n, nil
}

// setupGRO points msghdr i at buf, with room for a UDP_GRO control
// message.
func (r *recvScratch) setupGRO(i int, buf []byte) {
	h := &r.hs[i]
	iov := &r.iovs[i]
	iov.Base = nil
	if len(buf) > 0 {
		iov.Base = &buf[0]
	}
	iov.SetLen(len(buf))
	h.hdr.Namelen = unix.SizeofSockaddrInet6
	h.hdr.Control = &r.gro.cmsgs[i*groCmsgSpace]
	h.hdr.SetControllen(groCmsgSpace)
	h.hdr.Flags = 0
	h.len = 0
}

// sizeGRO returns the length of what msghdr i received and its segment
// size if it is a run of coalesced datagrams, or 0 if it is one.
func (r *recvScratch) sizeGRO(i int) (size, seg int) {
	h := &r.hs[i]
	size = int(h.len)
	seg = groSegment(r.gro.cmsgs[i*groCmsgSpace:][:h.hdr.Controllen])
	if seg <= 0 || seg >= size {
		seg = 0
	}
	return size, seg
}

// groSegment returns the segment size of a UDP_GRO control message in
// ctrl, or 0 if there is none.
func groSegment(ctrl []byte) int {
	for len(ctrl) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(ctrl) {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)])))
		}
		ctrl = ctrl[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(ctrl)):]
	}
	return 0
}
