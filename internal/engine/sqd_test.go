package engine

import (
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// TestSQDNewPath: an SQD → SQD modify with an address vector moves a
// connected QP to the new path (IBA 10.3.1): its requests and its ACKs
// go to the new address, sealed for the new envelope (the ACK's base is
// computed again), requests from there are accepted and those from the
// old address dropped.
func TestSQDNewPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		old := r.env
		r.inject(t, &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: []byte("a"), fill: rethAt(regionKey, 0, 1)})
		checkOut(t, r.sent(), []out{ack(0, 1)})

		moved, err := r.net.Listen(netip.MustParseAddrPort("10.0.0.3:4791"))
		if err != nil {
			t.Fatal(err)
		}
		defer moved.Close()
		for _, s := range []rigStep{
			{QPAttr{State: ib.QPStateSQD}, ib.QPAttrState},
			{QPAttr{State: ib.QPStateSQD, AH: AHAttr{IsGlobal: true, DGID: ib.GIDFromAddr(netip.MustParseAddr("10.0.0.3"))}}, ib.QPAttrState | ib.QPAttrAV},
			{QPAttr{State: ib.QPStateRTS}, ib.QPAttrState},
		} {
			if err := r.qp.Modify(&s.a, s.m); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var got []wire.Packet
		go receiveEach(moved, func(m conn.Message) {
			mu.Lock()
			got = append(got, wire.Packet(m.Buf))
			mu.Unlock()
		})

		// From the old address: dropped.
		r.inject(t, &pkt{op: wire.RCWriteOnly, psn: 1, ack: true, payload: []byte("x"), fill: rethAt(regionKey, 1, 1)})
		synctest.Wait()
		if n := r.dev.Counters()[DropWrongSource] - r.base[DropWrongSource]; n != 1 {
			t.Errorf("%d packets from the old address dropped as from the wrong source, want 1", n)
		}
		// From the new one: placed and acknowledged there.
		r.env.Src = netip.MustParseAddr("10.0.0.3")
		r.env.Prepare()
		r.peer = moved
		r.inject(t, &pkt{op: wire.RCWriteOnly, psn: 1, ack: true, payload: []byte("b"), fill: rethAt(regionKey, 1, 1)})
		synctest.Wait()
		if string(r.region[:2]) != "ab" {
			t.Errorf("region holds %q, want \"ab\"", r.region[:2])
		}
		// And a request of the QP's own goes there too.
		if _, err := r.qp.PostSend(&SendWR{WRID: 7, Opcode: ib.WRRDMAWrite,
			SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 2, LKey: ib.LKey(r.key)}}, RemoteAddr: 0x1000, RKey: 0x55}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		env := wire.Envelope{Src: old.Dst, Dst: r.env.Src, FlagsFragment: wire.FlagDontFragment, SrcPort: 4791, DstPort: 4791}
		var acks, writes int
		mu.Lock()
		defer mu.Unlock()
		for _, p := range got {
			if err := p.CheckICRC(&env); err != nil {
				t.Errorf("%v to the new address: %v", p, err)
			}
			switch p.BTH().Opcode() {
			case wire.RCAcknowledge:
				acks++
			case wire.RCWriteOnly:
				writes++
			}
		}
		if acks != 1 || writes != 1 {
			t.Errorf("new address got %d ACKs and %d WRITEs, want 1 and 1: %v", acks, writes, got)
		}
		if len(r.sent()) != 0 {
			t.Error("the old address still gets packets")
		}
	})
}

// TestSQDMaxDestRdAtomic: the responder's resources are sized at RTR, so
// an SQD → SQD modify that changes max_dest_rd_atomic is refused.
func TestSQDMaxDestRdAtomic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		if err := r.qp.Modify(&QPAttr{State: ib.QPStateSQD}, ib.QPAttrState); err != nil {
			t.Fatal(err)
		}
		same := QPAttr{State: ib.QPStateSQD, MaxDestRdAtomic: r.qp.attr.MaxDestRdAtomic}
		if err := r.qp.Modify(&same, ib.QPAttrState|ib.QPAttrMaxDestRdAtomic); err != nil {
			t.Errorf("the same max_dest_rd_atomic: %v", err)
		}
		other := QPAttr{State: ib.QPStateSQD, MaxDestRdAtomic: 1}
		if err := r.qp.Modify(&other, ib.QPAttrState|ib.QPAttrMaxDestRdAtomic); !errors.Is(err, ErrNotSupported) {
			t.Errorf("a new max_dest_rd_atomic: %v, want ErrNotSupported", err)
		}
	})
}
