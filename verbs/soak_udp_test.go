package verbs_test

import (
	"bytes"
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

var soakUDP = flag.Duration("soak.udp", 0, "run TestSoakUDP for this long (an hour: -soak.udp=1h -timeout=2h)")

// TestSoakUDP runs TestSoak's workload over loopback UDP for the duration
// -soak.udp asks for, every byte and completion checked, and samples the
// process's resident memory and goroutines twenty times: after the first
// sample (the warm-up), neither may grow — the goroutines not at all, the
// RSS by no more than half plus 16 MiB (the garbage collector's slack).
func TestSoakUDP(t *testing.T) {
	if *soakUDP <= 0 {
		t.Skip("a long run: -soak.udp=DURATION")
	}
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP,
		Cap: verbs.QPCap{MaxSendWR: 2 * soakBatch, MaxRecvWR: 2 * soakBatch}})
	s := newSoakRig(t, p, verbs.DefaultConnectOptions())
	start, every := time.Now(), *soakUDP/20
	next := start.Add(every)
	ops, samples := 0, 0
	var rss0 int64
	var g0 int
	for time.Since(start) < *soakUDP {
		n := 1 + s.rng.IntN(soakBatch)
		s.batch(t, n, false)
		ops += n
		if time.Now().Before(next) {
			continue
		}
		next = next.Add(every)
		rss, g := residentBytes(t), runtime.NumGoroutine()
		t.Logf("%8v: %9d operations, %6d MiB moved, RSS %4d MiB, %d goroutines",
			time.Since(start).Round(time.Second), ops, s.bytes>>20, rss>>20, g)
		if samples++; samples == 1 {
			rss0, g0 = rss, g
			continue
		}
		if g != g0 {
			t.Errorf("%d goroutines, %d after the warm-up", g, g0)
		}
		if rss > rss0+rss0/2+16<<20 {
			t.Errorf("RSS %d MiB, %d MiB after the warm-up", rss>>20, rss0>>20)
		}
	}
	s.finish(t)
	if s.failures > 0 {
		t.Errorf("%d batches ended in RETRY_EXC_ERR over loopback, which loses nothing", s.failures)
	}
}

// residentBytes reads the process's resident set size (VmRSS) from
// /proc/self/status.
func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(l); len(f) == 3 && string(f[0]) == "VmRSS:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
