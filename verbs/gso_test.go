package verbs_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestUDPOffloadLargeWriteRead moves 1 MiB each way over loopback UDP
// with segmentation offload on (the default: 4 KiB-MTU packets leave in
// GSO runs of 15, whose IPv4 IDs the engine seals the ICRCs for) and off,
// and checks the bytes and that no packet was dropped (for its ICRC or
// anything else) or retransmitted.
func TestUDPOffloadLargeWriteRead(t *testing.T) {
	for _, mode := range []struct{ name, env string }{{"gso", ""}, {"nogso", "1"}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Setenv("GOVERBS_NOGSO", mode.env)
			p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
			const n = 1 << 20
			// A writes its buffer into B's, then reads another of B's back.
			for _, op := range []verbs.WROpcode{verbs.WRRDMAWrite, verbs.WRRDMARead} {
				local, remote := p.A.Buffer(t, n, 0x21), p.B.Buffer(t, n, 0x43)
				post(t, p.A.QP, &verbs.SendWR{Opcode: op, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{local.SGE(0, n)}, RemoteAddr: remote.Addr(), RKey: remote.RKey()})
				if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCSuccess {
					t.Fatalf("%v: %v", op, wc.Status)
				}
				if !bytes.Equal(local.Bytes(), remote.Bytes()) {
					t.Fatalf("%v: the buffers differ after it", op)
				}
			}
			for _, d := range []*verbs.Device{p.A.Dev, p.B.Dev} {
				c := d.Counters()
				if got := c.Drops(); got != 0 {
					t.Errorf("%d packets dropped (ICRC or other), want 0", got)
				}
				for _, k := range []verbs.Counter{verbs.CompleterRetryErr, verbs.LocalACKTimeout, verbs.SendErr, verbs.RetransmittedPkts} {
					if got := c[k]; got != 0 {
						t.Errorf("%v = %d, want 0", k, got)
					}
				}
			}
		})
	}
}

// BenchmarkWriteOffload streams 64 KiB RDMA WRITEs (16 in flight) over
// loopback UDP with segmentation offload on and off
// (GOVERBS_NOGSO=1), for an A/B comparison in one run.
func BenchmarkWriteOffload(b *testing.B) {
	for _, mode := range []struct{ name, env string }{{"gso", ""}, {"nogso", "1"}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv("GOVERBS_NOGSO", mode.env)
			benchOps(b, verbstest.Options{Link: verbstest.UDP}, verbs.WRRDMAWrite, 65536, 16)
		})
	}
}

// BenchmarkWriteChainOffload posts small RDMA WRITEs in chains of 64 (one
// PostSend, only the last signalled, two chains in flight), so that one
// turn of the QP sends 64 equal packets, with segmentation offload on and
// off. (Posted one at a time, each WRITE leaves in a turn of its own and
// nothing coalesces.)
func BenchmarkWriteChainOffload(b *testing.B) {
	const chain, depth = 64, 2
	for _, size := range []int{8, 4096} {
		for _, mode := range []struct{ name, env string }{{"gso", ""}, {"nogso", "1"}} {
			b.Run(fmt.Sprintf("%d/%s", size, mode.name), func(b *testing.B) {
				b.Setenv("GOVERBS_NOGSO", mode.env)
				p := verbstest.New(b, verbstest.Options{Link: verbstest.UDP,
					Cap: verbs.QPCap{MaxSendWR: chain * depth}, CQSize: 2 * depth})
				src, dst := p.A.Buffer(b, size*chain, 1), p.B.Buffer(b, size*chain, 2)
				wrs := make([]verbs.SendWR, chain)
				for i := range wrs {
					wrs[i] = verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{src.SGE(i*size, size)},
						RemoteAddr: dst.Addr() + uint64(i*size), RKey: dst.RKey()}
					if i > 0 {
						wrs[i-1].Next = &wrs[i]
					}
				}
				wrs[chain-1].Flags = verbs.SendSignaled
				b.SetBytes(int64(size * chain))
				b.ReportAllocs()
				keepInFlight(b, p.A.SendCQ, depth, func() { post(b, p.A.QP, &wrs[0]) })
			})
		}
	}
}
