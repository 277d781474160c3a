//go:build !linux

package conn

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Off Linux (not a target, but the module must build) UDPBind sends
// through x/net's WriteBatch and receives through its ReadBatch, one
// datagram per call, allocating a source address per datagram. The socket
// keeps the system's defaults: the IPv4 Identification rule the ICRC
// relies on is Linux's, and so is segmentation offload.

// socket is a net.UDPConn here, with x/net's batch I/O over it.
type socket struct {
	uc  *net.UDPConn
	pc  batchConn
	err error // of closing uc
}

// batchConn is what UDPBind needs of ipv4.PacketConn and ipv6.PacketConn:
// both take the same Message type (an alias of x/net's socket.Message).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func (b *UDPBind) open(laddr netip.AddrPort) error {
	network := "udp4"
	if b.is6 {
		network = "udp6"
	}
	uc, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		return err
	}
	s := &socket{uc: uc}
	local := uc.LocalAddr().(*net.UDPAddr).AddrPort()
	if b.is6 {
		s.pc = ipv6.NewPacketConn(uc)
	} else {
		s.pc = ipv4.NewPacketConn(uc)
		local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	}
	b.sock, b.local = s, local
	return nil
}

// wake closes the socket, which wakes a blocked Recv.
func (s *socket) wake() { s.err = s.uc.Close() }

// close reports how closing went.
func (s *socket) close() error { return s.err }

func (s *socket) setTrafficClass(is6 bool, v int) error {
	if is6 {
		return ipv6.NewConn(s.uc).SetTrafficClass(v)
	}
	return ipv4.NewConn(s.uc).SetTOS(v)
}

func (s *socket) setOptions(bool) error { return nil }

func (s *socket) enableOffload() (gso, gro bool) { return false, false }

func (r *recvScratch) initGRO(bool, bool) {}

// initTry readies the scratch of a TryRecvCoalesced, which only Linux has.
func (r *recvScratch) initTry(int) {}

func (r *recvScratch) groOn() bool { return false }

// readCoalesced is read: nothing coalesces here.
func (r *recvScratch) readCoalesced(b *UDPBind, msgs []Message) (int, error) {
	return r.read(b, msgs)
}

// recvScratch is the ReadBatch state of a UDPBind, reused by every Recv.
type recvScratch struct {
	ms    []ipv4.Message
	bufs  [][1][]byte
	trunc []bool
}

func (r *recvScratch) init(size int) {
	r.ms = make([]ipv4.Message, size)
	r.bufs = make([][1][]byte, size)
	r.trunc = make([]bool, size)
	for i := range r.ms {
		r.ms[i].Buffers = r.bufs[i][:]
	}
}

func (r *recvScratch) read(b *UDPBind, msgs []Message) (int, error) {
	for i := range msgs {
		r.bufs[i][0] = msgs[i].Buf
	}
	n, err := b.sock.pc.ReadBatch(r.ms[:len(msgs)], 0)
	for i := range msgs {
		r.bufs[i][0] = nil
	}
	if err != nil {
		return 0, err
	}
	for i := range n {
		m := &msgs[i]
		m.N = r.ms[i].N
		m.IPID, m.HasIPID, m.Seg = 0, false, 0
		m.Addr = netip.AddrPort{}
		if ua, ok := r.ms[i].Addr.(*net.UDPAddr); ok {
			ap := ua.AddrPort()
			m.Addr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
		r.trunc[i] = r.ms[i].Flags&msgTrunc != 0
	}
	return n, nil
}

// sendScratch is the x/net message array Send packs into, with one
// net.UDPAddr (and the bytes behind its IP) per slot, so that turning a
// netip.AddrPort into the net.Addr x/net wants allocates nothing.
type sendScratch struct {
	ms    []ipv4.Message
	bufs  [][3][]byte
	addrs []net.UDPAddr
	ips   [][16]byte
}

func (s *sendScratch) init(size int) {
	s.ms = make([]ipv4.Message, size)
	s.bufs = make([][3][]byte, size)
	s.addrs = make([]net.UDPAddr, size)
	s.ips = make([][16]byte, size)
	for i := range s.ms {
		s.ms[i].Buffers = s.bufs[i][:]
		s.ms[i].Addr = &s.addrs[i]
	}
}

// send sends msgs with WriteBatch, one datagram per message.
func (s *sendScratch) send(b *UDPBind, msgs []Message) (int, error) {
	sent := 0
	for sent < len(msgs) {
		k, perr := s.pack(b, msgs[sent:])
		n := 0
		var err error
		if k > 0 {
			n, err = b.sock.pc.WriteBatch(s.ms[:k], 0)
		}
		s.clear(k)
		sent += n
		if err := roundErr(k, n, err, perr); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// pack fills the scratch from msgs, up to its size, and returns how many
// it packed. It stops before a datagram whose address the socket cannot
// reach and returns that error with the count.
func (s *sendScratch) pack(b *UDPBind, msgs []Message) (int, error) {
	k := min(len(msgs), len(s.ms))
	for i := range k {
		m := &msgs[i]
		a, err := b.destination(m.Addr)
		if err != nil {
			return i, err
		}
		ua := &s.addrs[i]
		if b.is6 {
			s.ips[i] = a.As16()
			ua.IP = s.ips[i][:16]
			ua.Zone = a.Zone()
		} else {
			*(*[4]byte)(s.ips[i][:4]) = a.As4()
			ua.IP = s.ips[i][:4]
			ua.Zone = ""
		}
		ua.Port = int(m.Addr.Port())
		s.bufs[i] = [3][]byte{m.Buf, m.Body, m.Tail}
	}
	return k, nil
}

// clear drops the references to the caller's buffers, which the bind
// must not keep once Send returns.
func (s *sendScratch) clear(k int) {
	for i := range k {
		s.bufs[i] = [3][]byte{}
	}
}

// flowTable is empty here: flows (FlowOpener) are Linux's.
type flowTable struct{}

func (b *UDPBind) flowNext(int) uint16            { return 0 }
func (b *UDPBind) closeFlows()                    {}
func (b *UDPBind) setFlowsTrafficClass(int) error { return nil }
