//go:build linux

package verbs_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestIdleDeviceUsesNoCPU: after a burst of round trips, which teaches the
// adaptive receive loops to poll, two UDP devices left idle sleep: the
// process spends almost no CPU time while they wait (item 4 of issue 10).
// A receive loop that kept polling would show as a full core.
func TestIdleDeviceUsesNoCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps a second")
	}
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	src, dst := p.A.Buffer(t, 64, 1), p.B.Buffer(t, 64, 0)
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{src.SGE(0, 64)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()}
	for range 200 {
		if err := p.A.QP.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
		if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
			t.Fatalf("WRITE: %v", wc.Status)
		}
	}
	if string(dst.Bytes()) != string(src.Bytes()) {
		t.Fatal("the WRITEs did not arrive")
	}
	time.Sleep(10 * time.Millisecond) // past the longest polling window
	const idle = time.Second
	before := cpuTime(t)
	time.Sleep(idle)
	used := cpuTime(t) - before
	t.Logf("CPU time while idle for %v: %v", idle, used)
	// A polling loop would use about idle; the runtime's own background
	// work (the scavenger, a GC) stays far below the bound.
	if used > idle/20 {
		t.Fatalf("idle devices used %v of CPU in %v", used, idle)
	}
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
