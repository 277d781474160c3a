// Package leakcheck fails tests that leave goroutines behind (the idea of
// wireguard-go's goroutineLeakCheck). It is for tests only.
package leakcheck

import (
	"runtime"
	"testing"
	"time"
)

// Check counts the goroutines now and, when the test ends, fails it if
// more are still running after a grace period. Tests using it must not run
// in parallel with others. Register it before anything the test cleans up,
// so that it runs last.
func Check(tb testing.TB) {
	tb.Helper()
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
