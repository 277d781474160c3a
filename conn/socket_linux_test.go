//go:build linux

package conn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/leakcheck"
	"golang.org/x/sys/unix"
)

// epollWatchers returns how many epoll sets of this process watch fd,
// from /proc/self/fdinfo (a "tfd:" line per watched descriptor).
func epollWatchers(t *testing.T, fd int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(info), "\n") {
			var tfd int
			if _, err := fmt.Sscanf(line, "tfd: %d ", &tfd); err == nil && tfd == fd {
				n++
			}
		}
	}
	return n
}

// The bind's socket is in no epoll set while nobody sleeps on it, so that
// a datagram that arrives while the bind polls wakes nothing; a Recv that
// sleeps has it watched (once) and takes it out again when it wakes.
func TestSocketWatchedOnlyWhileSleeping(t *testing.T) {
	leakcheck.Check(t)
	a, b := listen(t, loop4), listen(t, loop4)
	fd := b.sock.fd
	if n := epollWatchers(t, fd); n != 0 {
		t.Fatalf("a new socket is in %d epoll sets, want 0", n)
	}
	b.SetBusyPoll(-1) // sleep at the first empty poll
	got := make(chan error, 1)
	go func() {
		msgs := []Message{{Buf: make([]byte, 64)}}
		_, err := b.Recv(msgs)
		got <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for epollWatchers(t, fd) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a sleeping Recv did not register the socket")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := a.Send([]Message{{Buf: []byte("wake"), Addr: b.LocalAddr()}}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if n := epollWatchers(t, fd); n != 0 {
		t.Errorf("after the Recv woke the socket is in %d epoll sets, want 0", n)
	}
}

// socketPair returns a socket over one end of a non-blocking Unix datagram
// pair and the other end's descriptor: a sender there meets a full buffer
// when the peer does not read, which a UDP sender on loopback never does.
func socketPair(t *testing.T) (*socket, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skip("socketpair:", err)
	}
	s := &socket{fd: fds[0]}
	if err := s.initWaiters(); err != nil {
		unix.Close(fds[1])
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.wake()
		s.close()
		unix.Close(fds[1])
	})
	return s, fds[1]
}

// fill sends to fd until its buffer is full.
func fill(t *testing.T, fd int) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := unix.Write(fd, make([]byte, 512)); err == unix.EAGAIN {
			return
		} else if err != nil || i > 1<<16 {
			t.Fatalf("filling the buffer: %v after %d", err, i)
		}
	}
}

// A Write that meets a full buffer sleeps until the peer makes room, then
// finishes; one that sleeps when the socket is woken for closing returns
// net.ErrClosed.
func TestSocketWriteWaits(t *testing.T) {
	leakcheck.Check(t)
	s, peer := socketPair(t)
	fill(t, s.fd)
	tries := 0
	write := func() chan error {
		done := make(chan error, 1)
		go func() {
			done <- s.Write(func(fd uintptr) bool {
				tries++
				_, err := unix.Write(int(fd), []byte("last"))
				return err != unix.EAGAIN
			})
		}()
		return done
	}
	done := write()
	select {
	case err := <-done:
		t.Fatalf("Write on a full buffer returned %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if epollWatchers(t, s.fd) != 1 {
		t.Error("a sleeping Write did not register the socket")
	}
	buf := make([]byte, 1024)
	for { // drain: a Unix socket is writable again once most is read
		if _, err := unix.Read(peer, buf); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Write after room was made: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Write did not wake when the peer made room")
	}
	if tries < 2 {
		t.Errorf("the write was tried %d times, want a try after the wake-up", tries)
	}

	fill(t, s.fd)
	done = write()
	time.Sleep(20 * time.Millisecond) // let it sleep
	s.wake()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("woken Write returned %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wake did not end a sleeping Write")
	}
	if err := s.Read(func(uintptr) bool { return false }); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after wake returned %v, want net.ErrClosed", err)
	}
}

// TestZoneID checks how IPv6 zones resolve, for binding and for sending
// (sendScratch.scope caches the same answers): by interface name first,
// then as a number.
func TestZoneID(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	var s sendScratch
	for _, tc := range []struct {
		zone string
		want uint32
		ok   bool
	}{{"", 0, true}, {"lo", uint32(lo.Index), true}, {"4711", 4711, true}, {"no-such-if", 0, false}} {
		got, err := zoneID(tc.zone)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("zoneID(%q) = %d, %v; want %d, ok %v", tc.zone, got, err, tc.want, tc.ok)
		}
		if id := s.scope(tc.zone); id != tc.want {
			t.Errorf("scope(%q) = %d, want %d", tc.zone, id, tc.want)
		}
	}
}
