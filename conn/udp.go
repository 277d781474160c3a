package conn

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// udpBatchSize is how many datagrams one sendmmsg/recvmmsg moves. 64
	// amortises the syscall over a burst of MTU-sized packets while the
	// scratch stays a few KiB.
	udpBatchSize = 64
	// socketBufferSize is the SO_RCVBUF/SO_SNDBUF asked for: enough for
	// the bursts a software NIC produces, so that the kernel does not drop
	// while the receive loop is busy — a QP's send window reaches 2 MiB
	// (doc/protocol.md §8.4), which the kernel charges at up to twice its
	// size, and a device serves several QPs. Memory is charged only for
	// what is queued.
	socketBufferSize = 16 << 20
	// maxGSOSegments is the most datagrams one GSO send carries: Linux's
	// UDP_MAX_SEGMENTS, 64 before it was raised in newer kernels.
	maxGSOSegments = 64
	// maxGSOBytes is the most UDP payload one GSO send carries: the
	// 65535-byte IPv4 datagram less its IP and UDP headers.
	maxGSOBytes = 65535 - 20 - 8
	// maxFlows bounds the peers a UDPBind sends to over flows of their
	// own (FlowOpener); further peers are sent to from its own socket.
	// Each flow holds a socket.
	maxFlows = 16
	// noOffloadEnv names the environment variable that, set to 1, turns
	// segmentation offload off in every UDPBind (for A/B measurements).
	noOffloadEnv = "GOVERBS_NOGSO"
)

// Pre-built errors keep failure returns on the data path allocation-free.
var (
	errAddrFamily   = errors.New("conn: destination address family does not match the socket")
	errInvalidAddr  = errors.New("conn: invalid destination address")
	errNoProgress   = errors.New("conn: sendmmsg sent nothing")
	errNoFlow       = errors.New("conn: send by a flow that is not open")
	errFlowAddr     = errors.New("conn: send by a flow to another address than its peer")
	errLocalAddrNil = errors.New("conn: ListenUDP needs a valid local address")
)

// UDPBind is a Bind on one unconnected UDP socket. It sends with
// sendmmsg and receives with recvmmsg (on Linux its own calls, elsewhere
// golang.org/x/net's), reusing its scratch so that steady-state Send and
// Recv allocate nothing.
//
// On Linux it uses UDP segmentation offload where the kernel has it. On
// send (GSO), a run of planned datagrams to one address, all of one size
// but a shorter last, goes to the kernel as one datagram with a
// UDP_SEGMENT size, several runs per sendmmsg (see IPIDPlanner: the kernel
// numbers the segments' IPv4 IDs). If such a send fails as on a device
// without checksum offload (EIO; Linux 6.18 checksums in software instead)
// or with a segment size the path refuses (EINVAL), the bind stops
// coalescing for good and Send returns ErrReplan.
// On receive (UDP_GRO), the kernel may hand over many datagrams of one
// flow as one buffer; the bind receives into its own 64 KiB buffers and
// copies each datagram into a Message of its own. UDPOptions.NoOffload or
// GOVERBS_NOGSO=1 in the environment turns both off.
//
// A received datagram larger than its Message.Buf is truncated by the
// kernel; UDPBind drops it rather than hand a partial RoCEv2 packet to the
// engine (its ICRC could only fail), counts it (Truncated), and moves the
// later datagrams of the batch down into the freed slots by copying, so a
// Message keeps its own Buf. A later datagram that does not fit the
// smaller Buf of a freed slot (only possible with mixed buffer sizes) is
// dropped and counted too.
type UDPBind struct {
	sock  *socket // the OS's socket (socket_linux.go, udp_other.go)
	local netip.AddrPort
	is6   bool

	sendMu sync.Mutex
	tx     sendScratch // guarded by sendMu

	recvMu sync.Mutex
	rx     recvScratch // guarded by recvMu

	// Receives shared with another goroutine (SharedReceiver,
	// tryrecv_linux.go): the caller's gate, and TryRecvCoalesced's
	// scratch.
	gate  atomic.Pointer[sync.Mutex]
	tryMu sync.Mutex
	trx   recvScratch // guarded by tryMu

	gso atomic.Bool // coalescing sends; cleared for good on a GSO failure
	fl  flowTable   // sockets connected to peers (flow_linux.go)

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	truncated atomic.Uint64
	poll      pollWait // mode shared; the rest guarded by recvMu, or by the gate if set
}

// UDPOptions tunes ListenUDPWith; the zero value gives ListenUDP's socket.
type UDPOptions struct {
	// NoOffload turns off UDP segmentation offload on send (GSO) and
	// receive (GRO), leaving plain sendmmsg/recvmmsg. The environment
	// variable GOVERBS_NOGSO=1 does the same for every socket.
	NoOffload bool
}

// ListenUDP opens a UDP socket bound to laddr, with the default options.
func ListenUDP(laddr netip.AddrPort) (*UDPBind, error) {
	return ListenUDPWith(laddr, UDPOptions{})
}

// ListenUDPWith opens a UDP socket bound to laddr. The address family picks
// IPv4 or IPv6 (IPv4-mapped addresses count as IPv4); port 0 picks an
// ephemeral port. Production devices listen on RoCEv2Port.
//
// On IPv4 it sets IP_MTU_DISCOVER=IP_PMTUDISC_DO: with DF set and no
// connected peer Linux writes IPv4 Identification 0, which the RoCEv2 ICRC
// covers and which the peer assumes. On IPv6 it sets IPV6_DONTFRAG. It
// raises SO_RCVBUF/SO_SNDBUF to a few MiB where it may (best effort).
//
// Unless opts or the environment turn it off, it enables segmentation
// offload where the kernel supports it (Linux 5.0 and later).
func ListenUDPWith(laddr netip.AddrPort, opts UDPOptions) (*UDPBind, error) {
	if !laddr.Addr().IsValid() {
		return nil, errLocalAddrNil
	}
	addr := laddr.Addr()
	is6 := addr.Is6() && !addr.Is4In6()
	if !is6 {
		addr = addr.Unmap()
	}
	laddr = netip.AddrPortFrom(addr, laddr.Port())
	b := &UDPBind{is6: is6}
	if err := b.open(laddr); err != nil {
		return nil, fmt.Errorf("conn: listen %v: %w", laddr, err)
	}
	if err := b.sock.setOptions(is6); err != nil {
		b.Close()
		return nil, fmt.Errorf("conn: listen %v: %w", laddr, err)
	}
	b.tx.init(udpBatchSize)
	b.rx.init(udpBatchSize)
	b.trx.initTry(udpBatchSize)
	if !opts.NoOffload && os.Getenv(noOffloadEnv) != "1" {
		gso, gro := b.sock.enableOffload()
		b.gso.Store(gso)
		if gro {
			b.rx.initGRO(is6, true)
			b.trx.initGRO(is6, false)
		}
	}
	b.poll.init()
	return b, nil
}

// SetECN sets the ECN bits of the socket's TOS byte (IPv4) or traffic
// class (IPv6), which every datagram it sends then carries. The DSCP bits
// stay 0. The ICRC masks the whole byte (doc/protocol.md §4.1), so a hop
// that marks congestion breaks no packet.
func (b *UDPBind) SetECN(ecn uint8) error {
	b.sendMu.Lock() // the socket is used under sendMu (see Close)
	defer b.sendMu.Unlock()
	if b.closed.Load() {
		return net.ErrClosed
	}
	if err := b.sock.setTrafficClass(b.is6, int(ecn&3)); err != nil {
		return err
	}
	return b.setFlowsTrafficClass(int(ecn & 3))
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
		b.sock.wake()
		// What is under way on the socket ends (a Recv or Send that
		// polls sees the flag, one that sleeps was woken) before the
		// descriptor goes, so that no call reaches a number the system
		// has given to another file.
		b.recvMu.Lock()
		b.tryMu.Lock()
		b.sendMu.Lock()
		b.closeErr = b.sock.close()
		b.closeFlows()
		b.sendMu.Unlock()
		b.tryMu.Unlock()
		b.recvMu.Unlock()
	})
	return b.closeErr
}

// Send sends msgs in order, each to its own Addr, in batches of
// BatchSize datagrams or GSO runs. It returns how many were sent; on a
// failure it stops at the failing datagram and returns its error, or
// ErrReplan if the datagrams from there on were planned for coalescing
// that no longer happens.
func (b *UDPBind) Send(msgs []Message) (int, error) {
	if b.closed.Load() {
		return 0, net.ErrClosed
	}
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	raceRelease()
	n, err := b.tx.send(b, msgs)
	if err != nil && err != ErrReplan {
		err = b.ioErr(err)
	}
	return n, err
}

// roundErr is the error Send stops with after one sendmmsg of k entries
// sent n: the call's own error; errNoProgress if it sent nothing without
// one; none if it stopped early (sendmmsg stops before a failing datagram
// without an error, and the next round resends from it and gets the
// error); else perr, the reason packing stopped before the end.
func roundErr(k, n int, err, perr error) error {
	switch {
	case err != nil:
		return err
	case n == 0 && k > 0:
		return errNoProgress
	case n < k:
		return nil
	}
	return perr
}

// Offload reports whether the bind coalesces sends (GSO) and receives
// (GRO) now.
func (b *UDPBind) Offload() (gso, gro bool) { return b.gso.Load(), b.rx.groOn() }

// PlanIPIDs sets the IPv4 ID each message's datagram will carry when msgs
// is sent as it is: the ID of its send, from the bind's own socket 0 and
// from a flow the flow's count (see flow), plus the index of the datagram
// in its GSO run; always 0 over IPv6, which has no ID in the ICRC. It
// implements IPIDPlanner.
func (b *UDPBind) PlanIPIDs(msgs []Message) {
	gso := b.gso.Load()
	var sends [maxFlows + 1]uint16 // sends planned so far, per flow
	for i := 0; i < len(msgs); {
		k := 1
		if gso {
			k = runLen(msgs[i:])
		}
		var first uint16
		if fl := msgs[i].Flow; fl > 0 && fl <= maxFlows {
			first = b.flowNext(fl) + sends[fl]
			sends[fl]++
		}
		for j := range k {
			msgs[i+j].IPID, msgs[i+j].HasIPID = b.segmentID(first, j), true
		}
		i += k
	}
}

// segmentID is the IPv4 ID Linux gives segment j of a GSO send whose
// datagram gets ID first: for an unconnected DF socket, the 0 of a lone
// DF datagram (ip_select_ident_segs); segmentation counts up from there
// (inet_gso_segment). Checked on Linux 6.18 with a capture on a veth
// without UDP segmentation offload, where the kernel segments in software.
func (b *UDPBind) segmentID(first uint16, j int) uint16 {
	if b.is6 {
		return 0
	}
	return first + uint16(j)
}

// RunLimit implements RunLimiter: the datagrams of size bytes one GSO
// send carries, within the kernel's segment and byte limits (runLen's).
func (b *UDPBind) RunLimit(size int) int {
	if !b.gso.Load() || size <= 0 {
		return 1
	}
	return max(1, min(maxGSOSegments, maxGSOBytes/size))
}

// runLen returns how many datagrams from msgs[0] can go out as one GSO
// send: consecutive datagrams to one address, all of the first's size but
// the last, which may be shorter (the rule of UDP_SEGMENT), within the
// kernel's segment and byte limits.
func runLen(msgs []Message) int {
	size := msgs[0].Size()
	if size == 0 {
		return 1
	}
	total, k := size, 1
	for k < len(msgs) && k < maxGSOSegments {
		m := &msgs[k]
		l := m.Size()
		if l == 0 || l > size || total+l > maxGSOBytes || m.Addr != msgs[0].Addr || m.Flow != msgs[0].Flow {
			break
		}
		total += l
		k++
		if l < size {
			break
		}
	}
	return k
}

// runPlanned reports whether run, which could go out as one send whose
// datagram gets ID first, was planned that way: its datagrams carry the
// IDs the kernel will give them. (Messages that merely say ID 0, as
// memconn reports received ones, are sent alone.)
func (b *UDPBind) runPlanned(run []Message, first uint16) bool {
	for j := range run {
		if !run[j].HasIPID || run[j].IPID != b.segmentID(first, j) {
			return false
		}
	}
	return true
}

// destination checks that the socket can reach a and returns the address
// in the socket's family form.
func (b *UDPBind) destination(ap netip.AddrPort) (netip.Addr, error) {
	a := ap.Addr()
	if !a.IsValid() || ap.Port() == 0 {
		return a, errInvalidAddr
	}
	if b.is6 {
		if a.Is4() || a.Is4In6() {
			return a, errAddrFamily
		}
		return a, nil
	}
	if a = a.Unmap(); !a.Is4() {
		return a, errAddrFamily
	}
	return a, nil
}

// Recv blocks until at least one datagram arrived and fills msgs[0:n]
// (N, Addr; HasIPID is false: a UDP socket cannot see the IPv4
// Identification). Datagrams that did not fit their buffer are dropped.
// After Close it returns net.ErrClosed.
func (b *UDPBind) Recv(msgs []Message) (int, error) {
	return b.recv(msgs, false)
}

// Coalesces reports whether the socket coalesces receives (UDP GRO);
// see CoalescedReceiver.
func (b *UDPBind) Coalesces() bool { return b.rx.groOn() }

// RecvCoalesced is Recv into buffers of at least MaxDatagram bytes each,
// which may each receive a run of datagrams coalesced by UDP GRO
// (Message.Seg), straight from the socket; see CoalescedReceiver. A buffer
// shorter than MaxDatagram may have its datagrams dropped as truncated.
func (b *UDPBind) RecvCoalesced(msgs []Message) (int, error) {
	return b.recv(msgs, true)
}

func (b *UDPBind) recv(msgs []Message, coalesced bool) (int, error) {
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
		var n int
		var err error
		if coalesced {
			n, err = b.rx.readCoalesced(b, msgs)
		} else {
			n, err = b.rx.read(b, msgs)
		}
		if err != nil {
			return 0, b.ioErr(err)
		}
		if n = b.dropTruncated(msgs[:n], b.rx.trunc); n > 0 {
			raceAcquire()
			return n, nil
		}
	}
}

// dropTruncated removes the datagrams marked as truncated (trunc[i])
// from msgs, copying later ones down so that each Message keeps its
// caller's Buf, and returns how many remain.
func (b *UDPBind) dropTruncated(msgs []Message, trunc []bool) int {
	w := 0
	for i := range msgs {
		if trunc[i] {
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
			d.Addr, d.IPID, d.HasIPID, d.Seg = m.Addr, m.IPID, m.HasIPID, m.Seg
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
