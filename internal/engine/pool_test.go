package engine

import (
	"sync/atomic"
	"testing"
)

// TestRxBufRefs: a receive buffer counts as in use from getRxBuf until its
// last reference is dropped, and a release too many panics.
func TestRxBufRefs(t *testing.T) {
	var inUse atomic.Int32
	b := getRxBuf(&inUse)
	b.ref() // two queued packets
	b.ref()
	b.unref() // the receive loop lets go
	if got := inUse.Load(); got != 1 {
		t.Fatalf("in use %d with packets queued, want 1", got)
	}
	b.unref()
	b.unref()
	if got := inUse.Load(); got != 0 {
		t.Fatalf("in use %d after the last packet, want 0", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a release too many did not panic")
		}
	}()
	new(rxBuf).unref() // no reference held

}
