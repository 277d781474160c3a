package mem

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
)

// Deregister must refuse new accesses at once but return only after an
// access in progress has released its Ref.
func TestDeregisterWaitsForRef(t *testing.T) {
	tbl := NewTable(1, 0)
	r := mustRegister(t, tbl, pdA, make([]byte, 64), ib.AccessLocalWrite|ib.AccessRemoteWrite)
	key, addr := r.Key(), r.Addr()

	held, release := make(chan struct{}), make(chan struct{})
	var released atomic.Bool
	go func() {
		ref, f := tbl.Acquire(key, pdA, addr, 64, ib.AccessRemoteWrite)
		if f != FaultNone {
			t.Errorf("Acquire: %v", f)
			close(held)
			return
		}
		close(held)
		<-release
		copy(ref.Bytes(), "still mine")
		released.Store(true)
		ref.Release()
	}()
	<-held

	done := make(chan struct{})
	go func() {
		if err := tbl.Deregister(r); err != nil {
			t.Errorf("Deregister: %v", err)
		}
		close(done)
	}()
	// The key dies as soon as Deregister has run its first step, long
	// before it returns.
	waitKeyDies(t, "Deregister", func() (Ref, Fault) { return tbl.Acquire(key, pdA, addr, 1, ib.AccessRemoteWrite) })
	select {
	case <-done:
		t.Fatal("Deregister returned while a Ref was held")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-done
	if !released.Load() {
		t.Fatal("Deregister returned before Release")
	}
	if _, f := tbl.Acquire(key, pdA, addr, 1, 0); f != FaultBadKey {
		t.Errorf("Acquire after Deregister: %v", f)
	}
}

// waitKeyDies calls acquire until it refuses the key, as it must soon after
// what started, and fails the test if it does not within seconds.
func waitKeyDies(t *testing.T, what string, acquire func() (Ref, Fault)) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		ref, f := acquire()
		if f == FaultBadKey {
			return
		}
		ref.Release()
		if time.Now().After(deadline) {
			t.Fatalf("key still valid while %s runs", what)
		}
	}
}

// Readers race with a goroutine that registers and deregisters regions
// in a small table. Each region's buffer starts with a serial number
// written before Register; a reader holding a Ref must always see the
// number of the region its key was issued for, and after Deregister
// returns the owner overwrites it with poison, which no reader may see.
// The buffers are on the Go heap, so under -race a missing happens-before
// edge from Release to Deregister's return is reported as well.
func TestConcurrentAcquireDeregister(t *testing.T) {
	const (
		slots   = 8
		readers = 4
		iters   = 20000
		poison  = 0xdeadbeef
	)
	tbl := NewTable(slots, 0)
	// issued[i]: key<<32 | serial of the latest region at index i.
	var issued [slots + 1]atomic.Uint64
	var wg sync.WaitGroup
	var hits atomic.Int64
	// The readers start once a key is out: on a loaded machine they could
	// otherwise run all their iterations before the churn issued any, and
	// none would succeed (seen once under a parallel go test ./...).
	keyOut := make(chan struct{})

	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-keyOut:
			case <-t.Context().Done():
				return
			}
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range iters {
				v := issued[1+rng.IntN(slots)].Load()
				key, serial := Key(v>>32), uint32(v)
				// A peer holds an rkey and a VA: take the VA of the slot's
				// current region (which may be another one by now), and
				// now and then a junk one.
				va := rng.Uint64()
				if r := tbl.slots[key.Index()].Load(); r != nil && rng.IntN(4) != 0 {
					va = r.Addr()
				}
				ref, f := tbl.Acquire(key, pdA, va, 16, ib.AccessRemoteRead)
				if f != FaultNone {
					continue
				}
				b := ref.Bytes()
				if got := binary.LittleEndian.Uint32(b); got != serial {
					t.Errorf("key %#x reads %#x, want %#x", uint32(key), got, serial)
				}
				FetchAndAdd(b[8:16], 1) // an atomic on live memory
				hits.Add(1)
				ref.Release()
				// Busy readers may outnumber the CPUs; yielding now and
				// then, outside a Ref, keeps one from being preempted
				// while holding it and stalling Deregister for a whole
				// time slice.
				if rng.IntN(16) == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	readersDone := make(chan struct{})
	go func() { wg.Wait(); close(readersDone) }()

	// Churn until the readers are done, but stop before any slot is used
	// 256 times: then its tag would wrap and an old key would rightly
	// reach a new region.
	var live [slots + 1]*Region
	var bufs [slots + 1][]byte
	var uses [slots + 1]int
	rng := rand.New(rand.NewPCG(7, 7))
	round := uint32(1)
	for ; !isClosed(readersDone); round++ {
		i := 1 + rng.IntN(slots)
		if r := live[i]; r != nil {
			if err := tbl.Deregister(r); err != nil {
				t.Fatal(err)
			}
			binary.LittleEndian.PutUint32(bufs[i], poison)
			live[i] = nil
			continue
		}
		buf := make([]byte, 64)
		binary.LittleEndian.PutUint32(buf, round)
		r, err := tbl.Register(pdA, buf, ib.AccessRemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		idx := r.Key().Index()
		live[idx], bufs[idx] = r, buf
		if uses[idx]++; uses[idx] == 255 {
			break
		}
		issued[idx].Store(uint64(r.Key())<<32 | uint64(round))
		if round == 1 {
			close(keyOut)
		}
	}
	<-readersDone
	for _, r := range live {
		if r != nil {
			tbl.Deregister(r)
		}
	}
	if hits.Load() == 0 {
		t.Error("no access ever succeeded")
	}
	t.Logf("%d of %d accesses succeeded during %d rounds", hits.Load(), readers*iters, round)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
