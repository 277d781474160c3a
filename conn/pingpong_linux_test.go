//go:build linux

package conn

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkSyscallPingPong measures what the kernel alone costs one way
// of a latency test over loopback, with nothing of goverbs but its system
// calls: two threads, pinned to CPUs 0 and 1 where there are two, the
// echo side in a process of its own, bounce datagrams between two
// non-blocking sockets connected to each other, which they poll.
// "rc-pair" makes the calls of UDPBind and its flows for what an RC
// latency test puts on the wire per message and direction: a 40-byte
// request and its 20-byte ACK as one GSO sendmmsg, taken by recvmmsg
// from a socket with UDP GRO (doc/design.md §3, §4). "one" makes the raw
// UDP ping-pong's: a lone 40-byte datagram by sendto, taken by recvfrom.
// The pair is the floor of goverbs' ib_write_lat; scripts/bench.sh shows
// it beside the tool's figure. The metric is the
// median over chunks of round trips; ns/op is the mean, which the stalls
// of a busy machine inflate.
func BenchmarkSyscallPingPong(b *testing.B) {
	for _, tc := range []struct {
		name  string
		sizes []int
	}{{"rc-pair", []int{40, 20}}, {"one", []int{40}}} {
		b.Run(tc.name, func(b *testing.B) {
			pair := len(tc.sizes) > 1
			x := rawSocket(b, pair)
			// The echo side is a process of its own, as the peer of a
			// latency test is: a GSO send to a socket of the same process
			// measured twice as slow on Linux 6.18.
			echo := exec.Command(os.Args[0], "-test.run=^TestSyscallEcho$")
			echo.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%v", echoEnv, x.port, pair))
			out, err := echo.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := echo.Start(); err != nil {
				b.Fatal(err)
			}
			defer echo.Wait()
			defer echo.Process.Kill()
			var port int
			if _, err := fmt.Fscan(out, &port); err != nil {
				b.Fatalf("the echo process said no port: %v", err)
			}
			x.connect(b, port)
			toY := newRawSender(tc.sizes)
			total := 0
			for _, n := range tc.sizes {
				total += n
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			restore := pinThread(1)
			defer restore()
			// The median of the mean one-way time of chunks of round trips
			// (as perftest's "typical"): a stall of a thread preempted on
			// a busy machine spoils one chunk, not the figure.
			const chunk = 100
			var chunks []float64
			start, k := time.Now(), 0
			for b.Loop() {
				toY.send(x.fd)
				x.recv(total, pair)
				if k++; k == chunk {
					chunks = append(chunks, float64(time.Since(start).Nanoseconds())/(2*chunk))
					start, k = time.Now(), 0
				}
			}
			if len(chunks) > 0 {
				slices.Sort(chunks)
				b.ReportMetric(chunks[len(chunks)/2], "ns/one-way")
			}
		})
	}
}

// echoEnv names the variable that makes TestSyscallEcho the echo side of
// BenchmarkSyscallPingPong: "port:pair", where to send back and whether
// the datagrams come as an RC pair.
const echoEnv = "GOVERBS_SYSCALL_ECHO"

// TestSyscallEcho is the echo process of BenchmarkSyscallPingPong; run
// plainly it does nothing. It prints its port, then sends back what it
// receives until killed.
func TestSyscallEcho(t *testing.T) {
	spec := os.Getenv(echoEnv)
	if spec == "" {
		return
	}
	var port int
	var pair bool
	if _, err := fmt.Sscanf(spec, "%d:%t", &port, &pair); err != nil {
		t.Fatal(err)
	}
	sizes := []int{40}
	if pair {
		sizes = []int{40, 20}
	}
	runtime.LockOSThread()
	pinThread(0)
	y := rawSocket(t, pair)
	y.connect(t, port)
	toX := newRawSender(sizes)
	fmt.Println(y.port)
	for {
		y.recv(40+20*len(sizes[1:]), pair)
		toX.send(y.fd)
	}
}

// rawSock is a non-blocking loopback UDP socket with recvmmsg scratch.
type rawSock struct {
	fd   int
	port int
	hs   []mmsghdr
	iovs []unix.Iovec
	bufs [][]byte
	cmsg []byte
}

func rawSocket(tb testing.TB, gro bool) *rawSock {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	if gro {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1); err != nil {
			tb.Skipf("no UDP GRO: %v", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	s := &rawSock{fd: fd, port: sa.(*unix.SockaddrInet4).Port, hs: make([]mmsghdr, 16), iovs: make([]unix.Iovec, 16),
		bufs: make([][]byte, 16), cmsg: make([]byte, 16*64)}
	for i := range s.hs {
		s.bufs[i] = make([]byte, 2048)
		s.iovs[i].Base = &s.bufs[i][0]
		s.iovs[i].SetLen(len(s.bufs[i]))
		s.hs[i].hdr.Iov = &s.iovs[i]
		s.hs[i].hdr.SetIovlen(1)
	}
	return s
}

// connect connects the socket to the loopback port, whose datagrams
// alone it then receives.
func (s *rawSock) connect(tb testing.TB, port int) {
	if err := unix.Connect(s.fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
		tb.Fatal(err)
	}
}

// recv polls until total bytes arrived: with UDPBind's call (recvMsgs),
// asking after an empty poll for one datagram, so that catching it does
// not also cost a failed receive of a second; or, not mmsg, with
// recvfrom.
func (s *rawSock) recv(total int, mmsg bool) {
	if !mmsg {
		for got := 0; got < total; {
			n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.fd), uintptr(unsafe.Pointer(&s.bufs[0][0])), uintptr(len(s.bufs[0])), 0, 0, 0)
			if e == 0 {
				got += int(n)
			}
		}
		return
	}
	k := len(s.hs)
	for got := 0; got < total; {
		for i := range k {
			s.hs[i].hdr.Control = &s.cmsg[i*64]
			s.hs[i].hdr.SetControllen(64)
		}
		n, e := recvMsgs(uintptr(s.fd), s.hs[:k])
		if e != 0 {
			k = 1
			continue
		}
		for i := range int(n) {
			got += int(s.hs[i].len)
		}
	}
}

// rawSender sends its datagrams on a connected socket: several with one
// sendmmsg, as one GSO send (all of the first's size but a shorter last),
// one alone with sendto.
type rawSender struct {
	hs   []mmsghdr
	iovs []unix.Iovec
	cmsg []byte
}

func newRawSender(sizes []int) *rawSender {
	s := &rawSender{hs: make([]mmsghdr, 1), iovs: make([]unix.Iovec, len(sizes))}
	for i, n := range sizes {
		buf := make([]byte, n)
		s.iovs[i].Base = &buf[0]
		s.iovs[i].SetLen(n)
	}
	h := &s.hs[0].hdr
	h.Iov = &s.iovs[0]
	h.SetIovlen(len(sizes))
	if len(sizes) > 1 {
		s.cmsg = make([]byte, gsoCmsgSpace)
		c := (*unix.Cmsghdr)(unsafe.Pointer(&s.cmsg[0]))
		c.Level, c.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		c.SetLen(unix.CmsgLen(2))
		binary.NativeEndian.PutUint16(s.cmsg[unix.CmsgLen(0):], uint16(sizes[0]))
		h.Control = &s.cmsg[0]
		h.SetControllen(gsoCmsgSpace)
	}
	return s
}

func (s *rawSender) send(fd int) {
	for {
		var e unix.Errno
		if len(s.iovs) == 1 {
			_, _, e = unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(s.iovs[0].Base)), uintptr(s.iovs[0].Len), 0, 0, 0)
		} else {
			_, _, e = unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&s.hs[0])), 1, 0, 0, 0)
		}
		if e != unix.EAGAIN && e != unix.EINTR {
			return
		}
	}
}

// pinThread pins the calling thread to cpu, where the machine has it, and
// returns what restores its affinity.
func pinThread(cpu int) (restore func()) {
	var old, set unix.CPUSet
	if runtime.NumCPU() <= cpu || unix.SchedGetaffinity(0, &old) != nil {
		return func() {}
	}
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil {
		return func() {}
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }
}
