package memconn_test

import (
	"runtime"
	"testing"
	"time"
)

// checkGoroutines fails the test if it leaves more goroutines running
// than it found (wireguard-go's goroutineLeakCheck). Tests using it must
// not run in parallel.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}
