package mem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestAllocLayout(t *testing.T) {
	page := unix.Getpagesize()
	for _, n := range []int{1, 8, page - 1, page, page + 1, 1 << 20} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			b, err := Alloc(n)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Free()
			p := b.Bytes()
			if len(p) != n || cap(p) != n {
				t.Errorf("len %d cap %d, want %d", len(p), cap(p), n)
			}
			if AddrOf(p)%uint64(page) != 0 {
				t.Errorf("address %#x not page aligned", AddrOf(p))
			}
			if len(b.mem)%page != 0 || len(b.mem) < n {
				t.Errorf("mapping of %d bytes for %d", len(b.mem), n)
			}
			if b.Fd() < 0 {
				t.Errorf("fd %d", b.Fd())
			}
			for i := range p {
				p[i] = byte(i)
			}
			for i := range p {
				if p[i] != byte(i) {
					t.Fatalf("byte %d reads %d", i, p[i])
				}
			}
		})
	}
}

func TestAllocInvalidSize(t *testing.T) {
	for _, n := range []int{0, -1, int(^uint(0) >> 1)} {
		if b, err := Alloc(n); !errors.Is(err, ErrInvalidSize) {
			t.Errorf("Alloc(%d) = %v, %v; want ErrInvalidSize", n, b, err)
		}
	}
}

func TestFreeIdempotent(t *testing.T) {
	b, err := Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	fd := b.Fd()
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if b.Bytes() != nil || b.Fd() != -1 || b.Locked() {
		t.Errorf("after Free: Bytes %v, Fd %d, Locked %v", b.Bytes(), b.Fd(), b.Locked())
	}
	if err := b.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("memfd still open after Free: %v", err)
	}
}

// The memfd must be shareable: a second mapping of the fd (what a peer
// process would make) sees the same bytes. It must also be sealed so a
// peer cannot truncate it under us.
func TestAllocShareableAndSealed(t *testing.T) {
	b, err := Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	peer, err := unix.Mmap(b.Fd(), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(peer)
	b.Bytes()[7] = 42
	if peer[7] != 42 {
		t.Errorf("second mapping reads %d, want 42", peer[7])
	}
	if err := unix.Ftruncate(b.Fd(), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("truncating the memfd: %v, want EPERM (sealed)", err)
	}
	if err := unix.Ftruncate(b.Fd(), 1<<30); !errors.Is(err, unix.EPERM) {
		t.Errorf("growing the memfd: %v, want EPERM (sealed)", err)
	}
}

func TestAllocDontForkAndLock(t *testing.T) {
	b, err := Alloc(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	flags := vmFlags(t, AddrOf(b.Bytes()))
	if !flags["dc"] {
		t.Errorf("VmFlags %v lack dc (MADV_DONTFORK)", flags)
	}
	if flags["lo"] != b.Locked() {
		t.Errorf("VmFlags %v, Locked() = %v", flags, b.Locked())
	}
}

// Allocating more than RLIMIT_MEMLOCK must still succeed, unlocked
// unless the process may lock without limit (CAP_IPC_LOCK).
func TestAllocOverMemlockLimit(t *testing.T) {
	const limit = 64 << 10
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = min(limit, old.Max) // a hard limit of 0 tests the EPERM case
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		t.Skipf("cannot lower RLIMIT_MEMLOCK: %v", err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old) })

	small, err := Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Free()
	if lim.Cur >= 4096 && !small.Locked() {
		t.Errorf("one page under a %d-byte limit not locked", lim.Cur)
	}
	big, err := Alloc(4 * limit)
	if err != nil {
		t.Fatalf("Alloc over the memlock limit: %v", err)
	}
	defer big.Free()
	p := big.Bytes()
	p[0], p[len(p)-1] = 1, 2
	if p[0] != 1 || p[len(p)-1] != 2 {
		t.Error("memory over the limit not writable")
	}
	privileged := hasCapIPCLock(t)
	if !privileged && big.Locked() {
		t.Error("locked beyond RLIMIT_MEMLOCK without CAP_IPC_LOCK")
	}
	t.Logf("RLIMIT_MEMLOCK %d, CAP_IPC_LOCK %v: %d bytes locked %v", lim.Cur, privileged, len(p), big.Locked())
}

// vmFlags returns the VmFlags of the mapping starting at addr, from
// /proc/self/smaps.
func vmFlags(t *testing.T, addr uint64) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	prefix := fmt.Sprintf("%x-", addr)
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		// The first VmFlags after the mapping's header line is its own.
		in = in || strings.HasPrefix(line, prefix)
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			flags := map[string]bool{}
			for _, f := range strings.Fields(rest) {
				flags[f] = true
			}
			return flags
		}
	}
	t.Fatalf("mapping at %#x not in smaps", addr)
	return nil
}

// hasCapIPCLock reports whether the process has CAP_IPC_LOCK in its
// effective set, which lets mlock ignore RLIMIT_MEMLOCK.
func hasCapIPCLock(t *testing.T) bool {
	t.Helper()
	const capIPCLock = 14
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<capIPCLock) != 0
		}
	}
	t.Skip("no CapEff in /proc/self/status")
	return false
}
