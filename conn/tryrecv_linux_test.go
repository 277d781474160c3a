package conn

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/leakcheck"
)

// TestRecvGate: a RecvCoalesced that waits lets go of the gate, and
// returns holding it; under the gate, TryRecvCoalesced takes what is
// ready, in the order it came, without waiting, and what it leaves the
// waiting receive gets, each datagram once. Without a gate it takes
// nothing; after Close it fails.
func TestRecvGate(t *testing.T) {
	leakcheck.Check(t)
	a := listenWith(t, netip.MustParseAddrPort("127.0.9.12:0"), UDPOptions{})
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.13:0"), UDPOptions{NoOffload: true})
	var gate sync.Mutex
	a.SetRecvGate(&gate)
	one := func() []Message { return []Message{{Buf: make([]byte, MaxDatagram)}} }
	try := one()
	gate.Lock()
	if n, err := a.TryRecvCoalesced(try); n != 0 || err != nil {
		t.Fatalf("TryRecvCoalesced of an empty socket = %d, %v", n, err)
	}
	gate.Unlock()

	type result struct {
		msg  []byte
		err  error
		held bool
	}
	done := make(chan result)
	go func() {
		gate.Lock()
		msgs := one()
		n, err := a.RecvCoalesced(msgs)
		res := result{err: err, held: !gate.TryLock()}
		if n > 0 {
			res.msg = msgs[0].Buf[:msgs[0].N]
		}
		gate.Unlock()
		done <- res
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !gate.TryLock() {
		if time.Now().After(deadline) {
			t.Fatal("a waiting RecvCoalesced kept the gate")
		}
		runtime.Gosched()
	}
	// Growing sizes: no datagram joins another's GRO run.
	send := []Message{
		{Buf: payload(0, 100), Addr: a.LocalAddr()},
		{Buf: payload(1, 200), Addr: a.LocalAddr()},
		{Buf: payload(2, 300), Addr: a.LocalAddr()},
	}
	if n, err := b.Send(send); n != len(send) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	for i := range 2 {
		n, err := 0, error(nil)
		for n == 0 && err == nil && time.Now().Before(deadline) {
			n, err = a.TryRecvCoalesced(try)
		}
		if n != 1 || err != nil || !bytes.Equal(try[0].Buf[:try[0].N], send[i].Buf) {
			t.Fatalf("try %d: %d, %v, %d bytes; want datagram %d", i, n, err, try[0].N, i)
		}
	}
	gate.Unlock()
	res := <-done
	if res.err != nil || !bytes.Equal(res.msg, send[2].Buf) {
		t.Errorf("the waiting receive got %d bytes, %v; want datagram 2", len(res.msg), res.err)
	}
	if !res.held {
		t.Error("RecvCoalesced returned without the gate")
	}

	c := listenWith(t, netip.MustParseAddrPort("127.0.9.14:0"), UDPOptions{})
	if n, err := b.Send([]Message{{Buf: payload(3, 100), Addr: c.LocalAddr()}}); n != 1 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	time.Sleep(10 * time.Millisecond)
	if n, err := c.TryRecvCoalesced(try); n != 0 || err != nil {
		t.Errorf("TryRecvCoalesced without a gate = %d, %v; want 0, nil", n, err)
	}
	recvAll(t, c, one(), 1)

	a.Close()
	gate.Lock()
	if _, err := a.TryRecvCoalesced(try); !errors.Is(err, net.ErrClosed) {
		t.Errorf("TryRecvCoalesced after Close: %v, want net.ErrClosed", err)
	}
	gate.Unlock()
}

// TestTryRecvZeroAllocs: a TryRecvCoalesced, empty or not, allocates
// nothing.
func TestTryRecvZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts need a build without the race detector")
	}
	leakcheck.Check(t)
	a := listenWith(t, netip.MustParseAddrPort("127.0.9.15:0"), UDPOptions{})
	b := listenWith(t, netip.MustParseAddrPort("127.0.9.16:0"), UDPOptions{})
	var gate sync.Mutex
	a.SetRecvGate(&gate)
	send := []Message{{Buf: payload(0, 100), Addr: a.LocalAddr()}}
	try := []Message{{Buf: make([]byte, MaxDatagram)}}
	trip := func() {
		if n, err := b.Send(send); n != 1 || err != nil {
			t.Fatalf("Send = %d, %v", n, err)
		}
		gate.Lock()
		defer gate.Unlock()
		for got := 0; got == 0; {
			n, err := a.TryRecvCoalesced(try)
			if err != nil {
				t.Fatal(err)
			}
			got = n
		}
		if n, _ := a.TryRecvCoalesced(try); n != 0 {
			t.Fatalf("a second try got %d datagrams, want none", n)
		}
	}
	trip()
	if allocs := testing.AllocsPerRun(100, trip); allocs != 0 {
		t.Errorf("Send+TryRecvCoalesced: %v allocations, want 0", allocs)
	}
}
