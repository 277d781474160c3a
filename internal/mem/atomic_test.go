package mem

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// word8 returns an 8-aligned 8-byte slice; the allocator aligns any
// []byte of 8 bytes or more to 8.
func word8(v uint64) []byte {
	b := make([]byte, 16)[:8:8]
	binary.NativeEndian.PutUint64(b, v)
	return b
}

func TestAligned8(t *testing.T) {
	buf := make([]byte, 24)
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{buf[:8], true},
		{buf[8:16], true},
		{buf[1:9], false},
		{buf[4:12], false},
		{buf[:7], false},
		{buf[:9], false},
		{nil, false},
	} {
		if got := Aligned8(tc.b); got != tc.want {
			t.Errorf("Aligned8(len %d at offset %d) = %v", len(tc.b), AddrOf(tc.b)-AddrOf(buf), got)
		}
	}
}

func TestCompareAndSwap(t *testing.T) {
	b := word8(5)
	if old := CompareAndSwap(b, 5, 9); old != 5 || binary.NativeEndian.Uint64(b) != 9 {
		t.Errorf("matching CAS: old %d, now %d; want 5, 9", old, binary.NativeEndian.Uint64(b))
	}
	if old := CompareAndSwap(b, 5, 1); old != 9 || binary.NativeEndian.Uint64(b) != 9 {
		t.Errorf("failing CAS: old %d, now %d; want 9, 9", old, binary.NativeEndian.Uint64(b))
	}
}

func TestFetchAndAdd(t *testing.T) {
	b := word8(^uint64(0))
	if old := FetchAndAdd(b, 2); old != ^uint64(0) || binary.NativeEndian.Uint64(b) != 1 {
		t.Errorf("FAA wrapping: old %#x, now %d; want max, 1", old, binary.NativeEndian.Uint64(b))
	}
	if old := FetchAndAdd(b, ^uint64(0)); old != 1 || binary.NativeEndian.Uint64(b) != 0 {
		t.Errorf("FAA of -1: old %d, now %d; want 1, 0", old, binary.NativeEndian.Uint64(b))
	}
}

// The word is in host order (doc/protocol.md §9): the low byte in memory is the
// low byte of the value on a little-endian host.
func TestAtomicHostOrder(t *testing.T) {
	b := word8(0)
	FetchAndAdd(b, 0x0102030405060708)
	if binary.NativeEndian.Uint64(b) != 0x0102030405060708 {
		t.Errorf("memory % x is not the value in host order", b)
	}
}

func TestAtomicMisalignedPanics(t *testing.T) {
	buf := make([]byte, 16)
	for name, f := range map[string]func(){
		"CAS unaligned": func() { CompareAndSwap(buf[1:9], 0, 0) },
		"FAA short":     func() { FetchAndAdd(buf[:4], 1) },
		"FAA long":      func() { FetchAndAdd(buf, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

// Concurrent FETCH_ADD and COMPARE_SWAP increments must all land.
func TestAtomicConcurrent(t *testing.T) {
	const (
		workers = 8
		n       = 5000
	)
	b := word8(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if w%2 == 0 {
					FetchAndAdd(b, 3)
					continue
				}
				// A CAS increment retries with the value the failed
				// CAS returned, as a requester would.
				for old := uint64(0); ; {
					cur := CompareAndSwap(b, old, old+3)
					if cur == old {
						break
					}
					old = cur
				}
			}
		}()
	}
	wg.Wait()
	if got := binary.NativeEndian.Uint64(b); got != workers*n*3 {
		t.Errorf("sum %d, want %d", got, workers*n*3)
	}
}

// Atomics through the table on an Alloc'd buffer: the path of an atomic
// request at the responder.
func TestAtomicOnRegisteredBuffer(t *testing.T) {
	buf, err := Alloc(64)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	tbl := NewTable(1, 0)
	r := mustRegister(t, tbl, pdA, buf.Bytes(), ib.AccessLocalWrite|ib.AccessRemoteAtomic)
	defer tbl.Deregister(r)
	ref, f := tbl.Acquire(r.Key(), pdA, r.Addr()+16, 8, ib.AccessRemoteAtomic)
	if f != FaultNone {
		t.Fatal(f)
	}
	defer ref.Release()
	if !Aligned8(ref.Bytes()) {
		t.Fatal("8 bytes at an aligned VA not Aligned8")
	}
	FetchAndAdd(ref.Bytes(), 7)
	if old := CompareAndSwap(ref.Bytes(), 7, 100); old != 7 {
		t.Errorf("CAS old %d", old)
	}
	if got := binary.NativeEndian.Uint64(buf.Bytes()[16:]); got != 100 {
		t.Errorf("memory holds %d", got)
	}
}
