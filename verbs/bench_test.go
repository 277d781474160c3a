package verbs_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// benchOps keeps depth operations in flight over the link o gives and
// reports throughput: the data path end to end.
func benchOps(b *testing.B, o verbstest.Options, op verbs.WROpcode, size, depth int) {
	o.Cap, o.CQSize = verbs.QPCap{MaxSendWR: uint32(depth)}, 2*depth
	p := verbstest.New(b, o)
	src, dst := p.A.Buffer(b, size, 1), p.B.Buffer(b, size, 2)
	wr := verbs.SendWR{Opcode: op, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, size)},
		RemoteAddr: dst.Addr(), RKey: dst.RKey()}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	keepInFlight(b, p.A.SendCQ, depth, func() {
		if err := p.A.QP.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
	})
}

// benchLinks are the links the throughput benchmarks run over: the
// in-memory fabric, loopback UDP, and pollBind on one processor, whose
// figure is the engine's alone (both sides' work, with the link's copies
// in and out standing for the kernel's).
var benchLinks = []struct {
	name string
	opts func(b *testing.B) verbstest.Options
}{
	{"mem", func(*testing.B) verbstest.Options { return verbstest.Options{Link: verbstest.Mem} }},
	{"udp", func(*testing.B) verbstest.Options { return verbstest.Options{Link: verbstest.UDP} }},
	{"poll", pollLinkOptions},
}

// pollLinkOptions returns options for a pair over a pollBind link and
// runs the rest of the benchmark on one processor, as a pinned tool runs.
func pollLinkOptions(b *testing.B) verbstest.Options {
	procs := runtime.GOMAXPROCS(1)
	b.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	la, lb := newPollLink()
	return verbstest.Options{Binds: &[2]conn.Bind{la, lb}}
}

// keepInFlight runs post once per benchmark iteration, each post ending
// in one signalled completion on cq, with at most depth of them
// outstanding, and then waits for the rest.
func keepInFlight(b *testing.B, cq *verbs.CQ, depth int, post func()) {
	wcs := make([]verbs.WC, depth)
	inflight := 0
	for b.Loop() {
		for inflight >= depth {
			n, err := cq.Poll(wcs)
			if err != nil || (n > 0 && wcs[0].Status != verbs.WCSuccess) {
				b.Fatal(err, wcs[0])
			}
			inflight -= n
			if n == 0 {
				<-cq.Notify()
			}
		}
		post()
		inflight++
	}
	for inflight > 0 {
		n, _ := cq.Poll(wcs)
		inflight -= n
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, link := range benchLinks {
		for _, size := range []int{64, 4096, 65536} {
			b.Run(fmt.Sprintf("%s/%d", link.name, size), func(b *testing.B) { benchOps(b, link.opts(b), verbs.WRRDMAWrite, size, 16) })
		}
	}
}

func BenchmarkRead(b *testing.B) {
	for _, link := range benchLinks {
		b.Run(link.name+"/65536", func(b *testing.B) { benchOps(b, link.opts(b), verbs.WRRDMARead, 65536, 16) })
	}
}

// BenchmarkSendLatency sends one 64-byte signalled SEND at a time over
// loopback UDP and waits for the receiver's completion and then the
// sender's, which needs the ACK: a round trip. The receive loops poll
// their sockets for 50 µs after traffic, adapt (the default), or sleep on
// them at once.
func BenchmarkSendLatency(b *testing.B) {
	for _, mode := range []struct {
		name string
		poll time.Duration
	}{{"busypoll", 50 * time.Microsecond}, {"adaptive", 0}, {"sleep", verbs.BusyPollOff}} {
		b.Run("udp/"+mode.name, func(b *testing.B) {
			p := verbstest.New(b, verbstest.Options{Link: verbstest.UDP, BusyPoll: mode.poll})
			src, dst := p.A.Buffer(b, 64, 1), p.B.Buffer(b, 64, 0)
			send := verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 64)}}
			recv := verbs.RecvWR{SGList: []verbs.SGE{dst.SGE(0, 64)}}
			wcs := make([]verbs.WC, 1)
			spinPoll := func(cq *verbs.CQ) {
				for {
					n, err := cq.Poll(wcs)
					if err != nil || n == 1 && wcs[0].Status != verbs.WCSuccess {
						b.Fatal(err, wcs[0].Status)
					}
					if n == 1 {
						return
					}
					runtime.Gosched()
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.B.QP.PostRecv(&recv); err != nil {
					b.Fatal(err)
				}
				if err := p.A.QP.PostSend(&send); err != nil {
					b.Fatal(err)
				}
				spinPoll(p.B.RecvCQ)
				spinPoll(p.A.SendCQ)
			}
		})
	}
}

// BenchmarkWriteLatEngine runs ib_write_lat's loop — post an 8-byte
// signalled WRITE, wait for its completion, wait for the peer's WRITE to
// land — between two devices on a link with no system calls (pollBind),
// on one processor as a pinned tool runs: ns/op is what the engine alone
// costs one round trip, both sides' work, receiving by CQ.Wait's polling
// as over UDP (doc/design.md §4, "A waiter receives").
func BenchmarkWriteLatEngine(b *testing.B) {
	p := verbstest.New(b, pollLinkOptions(b))
	a, c := p.A.Buffer(b, 8, 0), p.B.Buffer(b, 8, 0)
	wrA := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.SGE(0, 8)},
		RemoteAddr: c.Addr(), RKey: c.RKey()}
	wrB := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{c.SGE(0, 8)},
		RemoteAddr: a.Addr(), RKey: a.RKey()}
	wcs := make([]verbs.WC, 1)
	post := func(s *verbstest.Side, wr *verbs.SendWR, mr *verbs.MR, v byte) {
		mr.Bytes()[7] = v
		if err := s.QP.PostSend(wr); err != nil {
			b.Fatal(err)
		}
	}
	// wait has s take its send's completion and then the peer's byte,
	// which mostly came in the same receive as the ACK.
	wait := func(s *verbstest.Side, mr *verbs.MR, v byte) {
		if n, err := s.SendCQ.Wait(context.Background(), wcs); n != 1 || err != nil || wcs[0].Status != verbs.WCSuccess {
			b.Fatal(n, err, wcs[0].Status)
		}
		for mr.Bytes()[7] != v {
			runtime.Gosched()
		}
	}
	// A starts; B, with no send of its own to wait for, takes the first
	// WRITE by its receive loop.
	post(p.A, &wrA, a, 1)
	for c.Bytes()[7] != 1 {
		runtime.Gosched()
	}
	v := byte(1)
	b.ReportAllocs()
	for b.Loop() {
		post(p.B, &wrB, c, v)
		wait(p.A, a, v)
		v++
		post(p.A, &wrA, a, v)
		wait(p.B, c, v)
	}
}

// BenchmarkPollEmpty is one look of a busy poller at an empty CQ of a
// device on loopback UDP: the CQ, then the socket, received for on the
// calling goroutine (doc/design.md §4, "A waiter receives"), with the
// yield every few looks, and at each yield a look at the socket of the
// pair's other device (CQ.progress; a process with one device, as each
// tool is, skips it: about 80 ns of ns/op). Between two looks, what
// arrives waits: half of ns/op on average is what busy-polling adds to
// each hop of a ping-pong, over the empty recvmsg a raw poller pays
// (doc/performance.md).
func BenchmarkPollEmpty(b *testing.B) {
	p := verbstest.New(b, verbstest.Options{Link: verbstest.UDP})
	wcs := make([]verbs.WC, 1)
	for range 1000 { // the receive loops start meanwhile and take their buffers
		p.A.SendCQ.Poll(wcs)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n, err := p.A.SendCQ.Poll(wcs); n != 0 || err != nil {
			b.Fatal(n, err)
		}
	}
}
