package verbs_test

import (
	"bytes"
	"net/netip"
	"runtime"
	"testing"

	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// TestPollReceives: on one processor, a loop that only polls gets its
// WRITEs acknowledged within a few hundred polls, because a Poll that
// finds nothing receives for its device, and when it yields for the
// process's other devices too. Polling alone, the devices' receive loops
// ran only when the runtime preempted the loop, every 10 ms: hundreds of
// thousands of empty polls a WRITE. A loop polling only the sender's CQ
// still waited about 8 ms a WRITE for the other device's receive loop,
// asleep in the runtime's network poller, which the runtime does not
// consult while a goroutine that only yields is runnable.
func TestPollReceives(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tc := range []struct {
		name        string
		both, third bool // poll the receiver's CQ too; open an idle third device first
	}{{"both CQs", true, false}, {"the sender's CQ", false, false}, {"the sender's CQ, three devices", false, true}} {
		name, both := tc.name, tc.both
		t.Run(name, func(t *testing.T) {
			if tc.third { // Poll takes the other devices in turn
				d, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort("127.0.0.1:0")})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
			}
			p := verbstest.New(t, verbstest.Options{Link: verbstest.UDP})
			src, dst := p.A.Buffer(t, 4096, 3), p.B.Buffer(t, 4096, 0)
			wcs := make([]verbs.WC, 1)
			const writes, maxPolls = 50, 2000
			for i := range writes {
				src.Bytes()[0] = byte(i)
				post(t, p.A.QP, &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{src.SGE(0, 4096)}, RemoteAddr: dst.Addr(), RKey: dst.RKey()})
				for polls := 0; ; polls++ {
					if polls == maxPolls {
						t.Fatalf("WRITE %d: no completion after %d polls of %s", i, maxPolls, name)
					}
					n, err := p.A.SendCQ.Poll(wcs)
					if err != nil {
						t.Fatal(err)
					}
					if n == 1 {
						break
					}
					if !both {
						continue
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
		})
	}
}
