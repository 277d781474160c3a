package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// coalescer makes a memconn bind receive as a UDP socket with GRO does:
// consecutive datagrams of one source and size (a shorter last) come in
// one buffer, with Seg set and the IPv4 ID unknown. Its first receive
// waits for gate, so that a test can queue a whole run first.
type coalescer struct {
	conn.Bind
	gate    chan struct{}
	scratch []conn.Message
	runs    atomic.Int32
}

func newCoalescer(b conn.Bind) *coalescer {
	c := &coalescer{Bind: b, gate: make(chan struct{}), scratch: make([]conn.Message, 64)}
	for i := range c.scratch {
		c.scratch[i].Buf = make([]byte, conn.MaxDatagram)
	}
	return c
}

func (c *coalescer) Coalesces() bool { return true }

func (c *coalescer) RecvCoalesced(msgs []conn.Message) (int, error) {
	<-c.gate
	n, err := c.Bind.Recv(c.scratch[:min(len(msgs), len(c.scratch))])
	if err != nil {
		return 0, err
	}
	w := -1
	for i := range n {
		d := &c.scratch[i]
		dg := d.Buf[:d.N]
		if w >= 0 {
			m := &msgs[w]
			seg := m.N
			if m.Seg != 0 {
				seg = m.Seg
			}
			if m.Addr == d.Addr && len(dg) <= seg && m.N%seg == 0 && m.N+len(dg) <= len(m.Buf) {
				if m.Seg == 0 {
					c.runs.Add(1)
				}
				m.Seg = seg
				m.N += copy(m.Buf[m.N:], dg)
				continue
			}
		}
		w++
		m := &msgs[w]
		m.N, m.Seg, m.Addr = copy(m.Buf, dg), 0, d.Addr
		m.IPID, m.HasIPID = 0, false
	}
	return w + 1, nil
}

// TestRecvCoalescedRuns writes a 3-packet RDMA WRITE whose MIDDLE and LAST
// arrive as one coalesced run, with the run's packets queued as views of
// the receive buffer (within the pin budget), copied out (budget 0), or,
// short, copied into their inbound slots, and checks the bytes placed and
// that nothing was dropped; then that an oversized datagram is.
func TestRecvCoalescedRuns(t *testing.T) {
	for _, tc := range []struct {
		budget int32
		seg    int
	}{{rxPinBudget, 256}, {0, 256}, {rxPinBudget, 8}} {
		budget, seg := tc.budget, tc.seg
		t.Run(fmt.Sprintf("budget%d/seg%d", budget, seg), func(t *testing.T) {
			old := rxPinBudget
			t.Cleanup(func() { rxPinBudget = old }) // after the device closed
			rxPinBudget = budget
			var c *coalescer
			r := newFuzzRig(t, func(cfg *DeviceConfig, _ *QPCap) { c = newCoalescer(cfg.Bind); cfg.Bind = c })
			data := make([]byte, 3*seg)
			for i := range data {
				data[i] = byte(i*7 + 1)
			}
			// Below the path MTU, three WRITEs of one packet each.
			ops, rethAt, length := []wire.Opcode{wire.RCWriteFirst, wire.RCWriteMiddle, wire.RCWriteLast}, 0, len(data)
			if seg < int(r.qp.mtu) {
				ops, rethAt, length = []wire.Opcode{wire.RCWriteOnly, wire.RCWriteOnly, wire.RCWriteOnly}, seg, seg
			}
			var batch []conn.Message
			for i, op := range ops {
				p, err := wire.NewPacket(make([]byte, pktBufSize), 0, &wire.BTHFields{Opcode: op, PKey: 0xffff,
					DestQP: r.qp.qpn, PSN: wire.PSN(i), AckRequest: i == len(ops)-1}, seg)
				if err != nil {
					t.Fatal(err)
				}
				if h := p.RETH(); h != nil {
					h.Encode(&wire.RETHFields{VA: mem.AddrOf(r.region) + uint64(i*rethAt), RKey: uint32(r.key), DMALength: uint32(length)})
				}
				copy(p.Payload(), data[i*seg:])
				p.SealICRC(&r.env)
				batch = append(batch, conn.Message{Buf: p, Addr: netip.AddrPortFrom(r.env.Dst, 4791)})
			}
			if n, err := r.peer.Send(batch); n != len(batch) || err != nil {
				t.Fatalf("Send = %d, %v", n, err)
			}
			close(c.gate)
			// The LAST asks for an ACK, which the turn sends after it
			// placed the data: the ACK counter says the write is done.
			for deadline := time.Now().Add(5 * time.Second); r.dev.Counters().Get(ACKSent) == 0; {
				if time.Now().After(deadline) {
					t.Fatalf("received %d of 3 packets, no ACK sent; drops %d", r.dev.Counters().Get(RcvdPkts), r.dev.Counters().Drops())
				}
				time.Sleep(10 * time.Microsecond)
			}
			r.qp.mu.Lock() // let the turn finish
			r.qp.mu.Unlock()
			if c.runs.Load() == 0 {
				t.Error("no coalesced run was received")
			}
			if d := r.dev.Counters().Drops(); d != 0 {
				t.Errorf("%d packets dropped", d)
			}
			if !bytes.Equal(r.region[:len(data)], data) {
				t.Error("the region does not hold the bytes written")
			}
			// A datagram longer than any packet is dropped, as a link
			// into packet buffers drops it.
			if _, err := r.peer.Send([]conn.Message{{Buf: make([]byte, pktBufSize+1), Addr: batch[0].Addr}}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); r.dev.Counters().Get(DropMalformed) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("an oversized datagram was not dropped as malformed")
				}
				time.Sleep(10 * time.Microsecond)
			}
		})
	}
}
