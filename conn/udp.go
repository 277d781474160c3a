package conn

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

const (
	// udpBatchSize is how many datagrams one sendmmsg/recvmmsg moves. 64
	// amortises the syscall over a burst of MTU-sized packets while the
	// scratch stays a few KiB.
	udpBatchSize = 64
	// socketBufferSize is the SO_RCVBUF/SO_SNDBUF asked for: a few MiB
	// absorb the bursts a software NIC produces (a 4 MiB buffer holds
	// about a thousand 4 KiB-MTU packets) so that the kernel does not drop
	// while the receive loop is busy.
	socketBufferSize = 4 << 20
)

// Pre-built errors keep failure returns on the data path allocation-free.
var (
	errAddrFamily   = errors.New("conn: destination address family does not match the socket")
	errInvalidAddr  = errors.New("conn: invalid destination address")
	errNoProgress   = errors.New("conn: sendmmsg sent nothing")
	errLocalAddrNil = errors.New("conn: ListenUDP needs a valid local address")
)

// batchConn is what UDPBind needs of ipv4.PacketConn and ipv6.PacketConn:
// both take the same Message type (an alias of x/net's socket.Message).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// UDPBind is a Bind on one unconnected UDP socket. It sends with
// sendmmsg (golang.org/x/net WriteBatch) and, on Linux, receives with
// recvmmsg, reusing its scratch so that steady-state Send and Recv
// allocate nothing.
//
// A received datagram larger than its Message.Buf is truncated by the
// kernel; UDPBind drops it rather than hand a partial RoCEv2 packet to the
// engine (its ICRC could only fail), counts it (Truncated), and moves the
// later datagrams of the batch down into the freed slots by copying, so a
// Message keeps its own Buf. A later datagram that does not fit the
// smaller Buf of a freed slot (only possible with mixed buffer sizes) is
// dropped and counted too.
type UDPBind struct {
	uc    *net.UDPConn
	rc    syscall.RawConn
	pc    batchConn
	local netip.AddrPort
	is6   bool

	sendMu sync.Mutex
	tx     sendScratch // guarded by sendMu

	recvMu sync.Mutex
	rx     recvScratch // guarded by recvMu

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	truncated atomic.Uint64
	poll      pollWait // mode shared; the rest guarded by recvMu
}

// ListenUDP opens a UDP socket bound to laddr. The address family picks
// IPv4 or IPv6 (IPv4-mapped addresses count as IPv4); port 0 picks an
// ephemeral port. Production devices listen on RoCEv2Port.
//
// On IPv4 it sets IP_MTU_DISCOVER=IP_PMTUDISC_DO: with DF set and no
// connected peer Linux writes IPv4 Identification 0, which the RoCEv2 ICRC
// covers and which the peer assumes. On IPv6 it sets IPV6_DONTFRAG. It
// raises SO_RCVBUF/SO_SNDBUF to a few MiB where it may (best effort).
func ListenUDP(laddr netip.AddrPort) (*UDPBind, error) {
	if !laddr.Addr().IsValid() {
		return nil, errLocalAddrNil
	}
	addr := laddr.Addr()
	is6 := addr.Is6() && !addr.Is4In6()
	network := "udp4"
	if is6 {
		network = "udp6"
	} else {
		addr = addr.Unmap()
	}
	laddr = netip.AddrPortFrom(addr, laddr.Port())
	uc, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		return nil, fmt.Errorf("conn: listen %v: %w", laddr, err)
	}
	b, err := newUDPBind(uc, is6)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("conn: listen %v: %w", laddr, err)
	}
	return b, nil
}

func newUDPBind(uc *net.UDPConn, is6 bool) (*UDPBind, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := setSocketOptions(rc, is6); err != nil {
		return nil, err
	}
	b := &UDPBind{uc: uc, rc: rc, is6: is6}
	local := uc.LocalAddr().(*net.UDPAddr).AddrPort()
	if is6 {
		b.pc = ipv6.NewPacketConn(uc)
		b.local = local
	} else {
		b.pc = ipv4.NewPacketConn(uc)
		b.local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	}
	b.tx.init(udpBatchSize)
	b.rx.init(udpBatchSize)
	b.poll.init()
	return b, nil
}

// BatchSize returns how many datagrams one system call moves.
func (b *UDPBind) BatchSize() int { return udpBatchSize }

// LocalAddr returns the bound address and port.
func (b *UDPBind) LocalAddr() netip.AddrPort { return b.local }

// SetBusyPoll sets how long Recv, once the socket has run dry, keeps
// polling it before it sleeps in the runtime poller. A datagram that
// arrives while Recv polls is picked up without a wake-up, which costs
// tens of microseconds on virtual machines, for the price of a busy
// thread while it waits.
//
// d > 0 polls for d after every datagram. d < 0 never polls: Recv sleeps
// as soon as the socket is empty (event mode, no CPU spent waiting). d = 0,
// the default, adapts: the window follows the gaps between datagrams, up
// to 200 µs, so a conversation is polled through its pauses while a device
// whose traffic stopped polls once and then sleeps (see pollWait). Linux
// only; elsewhere Recv always sleeps.
func (b *UDPBind) SetBusyPoll(d time.Duration) { b.poll.mode.Store(int64(d)) }

// Truncated returns how many received datagrams were dropped because they
// did not fit the receive buffer.
func (b *UDPBind) Truncated() uint64 { return b.truncated.Load() }

// Close closes the socket; a Recv blocked in the kernel wakes up and
// returns net.ErrClosed. Close is idempotent.
func (b *UDPBind) Close() error {
	b.closeOnce.Do(func() {
		// Set the flag before closing, so that a Recv woken by the close
		// reports net.ErrClosed and not the raw error it got.
		b.closed.Store(true)
		b.closeErr = b.uc.Close()
	})
	return b.closeErr
}

// Send sends msgs in order, each to its own Addr, in batches of
// BatchSize. It returns how many were sent; on a failure it stops at the
// failing datagram and returns its error.
func (b *UDPBind) Send(msgs []Message) (int, error) {
	if b.closed.Load() {
		return 0, net.ErrClosed
	}
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	raceRelease()
	sent := 0
	for sent < len(msgs) {
		k, perr := b.tx.pack(msgs[sent:], b.is6)
		n := 0
		var err error
		if k > 0 {
			n, err = b.pc.WriteBatch(b.tx.ms[:k], 0)
		}
		b.tx.clear(k)
		sent += n
		switch {
		case err != nil:
			return sent, b.ioErr(err)
		case n < k:
			// sendmmsg stops before a failing datagram without an
			// error; the next round resends from it and gets the error.
			if n == 0 {
				return sent, errNoProgress
			}
		case perr != nil:
			return sent, perr
		}
	}
	return sent, nil
}

// Recv blocks until at least one datagram arrived and fills msgs[0:n]
// (N, Addr; HasIPID is false: a UDP socket cannot see the IPv4
// Identification). Datagrams that did not fit their buffer are dropped.
// After Close it returns net.ErrClosed.
func (b *UDPBind) Recv(msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	msgs = msgs[:min(len(msgs), udpBatchSize)]
	b.recvMu.Lock()
	defer b.recvMu.Unlock()
	for {
		if b.closed.Load() {
			return 0, net.ErrClosed
		}
		n, err := b.rx.read(b, msgs)
		if err != nil {
			return 0, b.ioErr(err)
		}
		if n = b.dropTruncated(msgs[:n]); n > 0 {
			raceAcquire()
			return n, nil
		}
	}
}

// dropTruncated removes the datagrams b.rx marked as truncated from msgs,
// copying later ones down so that each Message keeps its caller's Buf,
// and returns how many remain.
func (b *UDPBind) dropTruncated(msgs []Message) int {
	w := 0
	for i := range msgs {
		if b.rx.trunc[i] {
			b.truncated.Add(1)
			continue
		}
		if w != i {
			m := &msgs[i]
			d := &msgs[w]
			if len(d.Buf) < m.N {
				b.truncated.Add(1)
				continue
			}
			d.N = copy(d.Buf, m.Buf[:m.N])
			d.Addr, d.IPID, d.HasIPID = m.Addr, m.IPID, m.HasIPID
		}
		w++
	}
	return w
}

// ioErr maps an error from the socket to net.ErrClosed once the bind is
// closed, so callers can stop on errors.Is(err, net.ErrClosed) whatever
// the socket reported while it was being torn down.
func (b *UDPBind) ioErr(err error) error {
	if b.closed.Load() {
		return net.ErrClosed
	}
	return err
}

// sendScratch is the x/net message array Send packs into, with one
// net.UDPAddr (and the bytes behind its IP) per slot, so that turning a
// netip.AddrPort into the net.Addr x/net wants allocates nothing.
type sendScratch struct {
	ms    []ipv4.Message
	bufs  [][1][]byte
	addrs []net.UDPAddr
	ips   [][16]byte
}

func (s *sendScratch) init(size int) {
	s.ms = make([]ipv4.Message, size)
	s.bufs = make([][1][]byte, size)
	s.addrs = make([]net.UDPAddr, size)
	s.ips = make([][16]byte, size)
	for i := range s.ms {
		s.ms[i].Buffers = s.bufs[i][:]
		s.ms[i].Addr = &s.addrs[i]
	}
}

// pack fills the scratch from msgs, up to its size, and returns how many
// it packed. It stops before a datagram whose address the socket cannot
// reach and returns that error with the count.
func (s *sendScratch) pack(msgs []Message, is6 bool) (int, error) {
	k := min(len(msgs), len(s.ms))
	for i := range k {
		m := &msgs[i]
		a := m.Addr.Addr()
		if !a.IsValid() || m.Addr.Port() == 0 {
			return i, errInvalidAddr
		}
		ua := &s.addrs[i]
		if is6 {
			if a.Is4() || a.Is4In6() {
				return i, errAddrFamily
			}
			s.ips[i] = a.As16()
			ua.IP = s.ips[i][:16]
			ua.Zone = a.Zone()
		} else {
			if a = a.Unmap(); !a.Is4() {
				return i, errAddrFamily
			}
			*(*[4]byte)(s.ips[i][:4]) = a.As4()
			ua.IP = s.ips[i][:4]
			ua.Zone = ""
		}
		ua.Port = int(m.Addr.Port())
		s.bufs[i][0] = m.Buf
	}
	return k, nil
}

// clear drops the references to the caller's buffers, which the bind
// must not keep once Send returns.
func (s *sendScratch) clear(k int) {
	for i := range k {
		s.bufs[i][0] = nil
	}
}
