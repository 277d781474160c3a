package verbs_test

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestPollReceives: on one processor, a loop that only polls — the send
// CQ of one device, the receive CQ of the other — gets its WRITEs
// acknowledged within a few polls, because a Poll that finds nothing
// receives for its device. Polling alone, the devices' receive loops
// ran only when the runtime preempted the loop, every 10 ms: hundreds of
// thousands of empty polls a WRITE.
func TestPollReceives(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	src, dst := p.A.Buffer(t, 4096, 3), p.B.Buffer(t, 4096, 0)
	wcs := make([]verbs.WC, 1)
	const writes, maxPolls = 20, 2000
	for i := range writes {
		src.Bytes()[0] = byte(i)
		post(t, p.A.QP, &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{src.SGE(0, 4096)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
		polls := 0
		for ; ; polls++ {
			if polls == maxPolls {
				t.Fatalf("WRITE %d: no completion after %d polls of each CQ", i, maxPolls)
			}
			n, err := p.A.SendCQ.Poll(wcs)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			if _, err := p.B.RecvCQ.Poll(wcs); err != nil {
				t.Fatal(err)
			}
		}
		if wcs[0].Status != verbs.WCSuccess || wcs[0].WRID != uint64(i) {
			t.Fatalf("WRITE %d completed %+v", i, wcs[0])
		}
		if !bytes.Equal(dst.Bytes(), src.Bytes()) {
			t.Fatalf("WRITE %d: the bytes did not arrive", i)
		}
	}
}

// TestPollReceivesForOthers: on one processor, a loop that polls only the
// send CQ of one device gets its WRITEs to another device of the process
// acknowledged within a few hundred polls. The other device's receive
// loop waits for the runtime to look at the network, which a goroutine
// that only yields does not let it do (every 10 ms, about 8 ms a WRITE
// measured); a Poll that finds nothing receives for the process's other
// devices too when it yields.
func TestPollReceivesForOthers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
	src, dst := p.A.Buffer(t, 64, 3), p.B.Buffer(t, 64, 0)
	wcs := make([]verbs.WC, 1)
	const writes, maxPolls = 50, 2000
	for i := range writes {
		src.Bytes()[0] = byte(i)
		post(t, p.A.QP, &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGList: []verbs.SGE{src.SGE(0, 64)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
		for polls := 0; ; polls++ {
			if polls == maxPolls {
				t.Fatalf("WRITE %d: no completion after %d polls of the sender's CQ", i, maxPolls)
			}
			n, err := p.A.SendCQ.Poll(wcs)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
		}
		if wcs[0].Status != verbs.WCSuccess || wcs[0].WRID != uint64(i) {
			t.Fatalf("WRITE %d completed %+v", i, wcs[0])
		}
		if !bytes.Equal(dst.Bytes(), src.Bytes()) {
			t.Fatalf("WRITE %d: the bytes did not arrive", i)
		}
	}
}
