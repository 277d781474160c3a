// Package leakcheck fails tests that leave goroutines behind (the idea of
// wireguard-go's goroutineLeakCheck). It is for tests only.
package leakcheck

import (
	"runtime"
	"testing"
	"time"
)

// realStart is the real time when the package loaded, outside any
// synctest bubble.
var realStart = time.Now()

// Check counts the goroutines now and, when the test ends, fails it if
// more are still running after a grace period. Tests using it must not run
// in parallel with others. Register it before anything the test cleans up,
// so that it runs last.
//
// Inside a testing/synctest bubble it checks nothing: synctest.Test itself
// fails a test whose goroutines do not all exit, and the count it would
// compare is of the whole process, whose goroutines outside the bubble
// come and go in real time while the grace period passed in the bubble's
// virtual time, at once (a transient goroutine of the race detector's
// runtime failed tests that leaked nothing).
func Check(tb testing.TB) {
	tb.Helper()
	if inBubble() {
		return
	}
	before := runtime.NumGoroutine()
	tb.Cleanup(func() {
		if tb.Failed() {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				tb.Errorf("goroutine leak: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// inBubble reports whether the caller runs in a synctest bubble, whose
// clock starts at midnight UTC on 2000-01-01, long before any real time
// the package could have loaded at.
func inBubble() bool { return time.Now().Before(realStart) }
