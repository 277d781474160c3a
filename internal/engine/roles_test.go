package engine

import (
	"bytes"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// pktRig is a fuzzRig run inside a synctest bubble whose raw peer also
// collects what the QP sends: a test injects exact packets, as the receive
// loop hands them to the QP, and reads the exact packets that come out.
// Virtual time moves only when a step sleeps, so timers fire when a test
// says. The QP has path MTU 256, timeout 1 (8.192 µs), retry_cnt 1,
// rnr_retry 1, min_rnr_timer 1, and one receive WQE of 512 bytes at the
// start of the region.
type pktRig struct {
	*fuzzRig
	mu   sync.Mutex
	out  []wire.Packet
	base Counters
	key2 mem.Key // a second region's key, if a row registers one
}

func newPktRig(t *testing.T, tweaks ...rigTweak) *pktRig {
	return newPktRigType(t, ib.QPTypeRC, tweaks...)
}

func newPktRigType(t *testing.T, typ ib.QPType, tweaks ...rigTweak) *pktRig {
	r := &pktRig{fuzzRig: newFuzzRigType(t, typ, tweaks...)}
	go r.collect()
	synctest.Wait()
	r.base = r.dev.Counters()
	return r
}

// collect copies every packet the peer receives until the peer closes.
func (r *pktRig) collect() {
	receiveEach(r.peer, func(m conn.Message) {
		r.mu.Lock()
		r.out = append(r.out, wire.Packet(m.Buf))
		r.mu.Unlock()
	})
}

// receiveEach hands each datagram b receives to each, copied (Buf holds
// its N bytes), until b closes.
func receiveEach(b conn.Bind, each func(m conn.Message)) {
	msgs := make([]conn.Message, 8)
	for i := range msgs {
		msgs[i].Buf = make([]byte, pktBufSize)
	}
	for {
		n, err := b.Recv(msgs)
		if err != nil {
			return
		}
		for _, m := range msgs[:n] {
			m.Buf = bytes.Clone(m.Buf[:m.N])
			each(m)
		}
	}
}

// sent lets the device finish what it is doing and returns the packets the
// QP sent since the last call.
func (r *pktRig) sent() []wire.Packet {
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.out
	r.out = nil
	return out
}

// pkt describes a packet from the peer: BTH fields (P_Key and DestQP are
// filled in), payload, and a function that fills the extension headers.
type pkt struct {
	op      wire.Opcode
	psn     wire.PSN
	ack     bool // AckReq
	payload []byte
	fill    func(r *pktRig, p wire.Packet)
}

// inject seals p as a packet from the peer and sends it to the QP.
func (r *pktRig) inject(t *testing.T, p *pkt) {
	t.Helper()
	f := wire.BTHFields{Opcode: p.op, PKey: defaultPKey, DestQP: r.qp.qpn, PSN: p.psn, AckRequest: p.ack}
	b, err := wire.NewPacket(make([]byte, pktBufSize), 0, &f, len(p.payload))
	if err != nil {
		t.Fatal(err)
	}
	copy(b.Payload(), p.payload)
	if p.fill != nil {
		p.fill(r, b)
	}
	b.SealICRC(&r.env)
	if _, err := r.peer.Send([]conn.Message{{Buf: b, Addr: netip.AddrPortFrom(r.env.Dst, 4791)}}); err != nil {
		t.Fatal(err)
	}
}

// out is a packet the QP must send: opcode, PSN, the AETH syndrome and MSN
// where the opcode has an AETH, the original value of an ATOMIC
// ACKNOWLEDGE, the RETH of a READ request, and the payload.
type out struct {
	op      wire.Opcode
	psn     wire.PSN
	syn     wire.Syndrome
	msn     uint32
	orig    uint64
	reth    *wire.RETHFields
	payload []byte
}

// ack, nak and rnr describe the ACKNOWLEDGE packets a responder sends.
func ack(psn wire.PSN, msn uint32) out {
	return out{op: wire.RCAcknowledge, psn: psn, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: msn}
}

func nak(code wire.NAKCode, psn wire.PSN, msn uint32) out {
	return out{op: wire.RCAcknowledge, psn: psn, syn: wire.NAKSyndrome(code), msn: msn}
}

// checkOut compares the packets the QP sent with want, field by field.
func checkOut(t *testing.T, got []wire.Packet, want []out) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("QP sent %d packets, want %d:", len(got), len(want))
		for _, p := range got {
			t.Errorf("  %v", p)
		}
		return
	}
	for i, p := range got {
		w := &want[i]
		if err := p.Validate(); err != nil {
			t.Errorf("packet %d: %v", i, err)
			continue
		}
		if p.Opcode() != w.op || p.BTH().PSN() != w.psn || p.BTH().DestQP() != fuzzPeerQPN {
			t.Errorf("packet %d: %v PSN %d to QP 0x%x, want %v PSN %d to QP 0x%x",
				i, p.Opcode(), p.BTH().PSN(), p.BTH().DestQP(), w.op, w.psn, fuzzPeerQPN)
		}
		if a := p.AETH(); a != nil && (a.Syndrome() != w.syn || a.MSN() != w.msn) {
			t.Errorf("packet %d (%v): AETH syndrome 0x%02x MSN %d, want 0x%02x MSN %d",
				i, p.Opcode(), uint8(a.Syndrome()), a.MSN(), uint8(w.syn), w.msn)
		}
		if h := p.AtomicAckETH(); h != nil && h.OrigData() != w.orig {
			t.Errorf("packet %d: original value 0x%x, want 0x%x", i, h.OrigData(), w.orig)
		}
		if w.reth != nil && p.RETH().Decode() != *w.reth {
			t.Errorf("packet %d: RETH %+v, want %+v", i, p.RETH().Decode(), *w.reth)
		}
		if !bytes.Equal(p.Payload(), w.payload) {
			t.Errorf("packet %d (%v PSN %d): payload %q, want %q", i, p.Opcode(), p.BTH().PSN(), p.Payload(), w.payload)
		}
	}
}

// step is one event of a row: a send WR posted, a receive WR posted, a
// packet injected or virtual time passing; then the packets the QP must
// have sent in answer.
type step struct {
	post  func(r *pktRig) *SendWR
	recv  bool // post another 512-byte receive WQE at the start of the region
	in    *pkt
	sleep time.Duration
	// progress calls Device.Progress, which must receive something, and
	// then post, if set, before anything else runs.
	progress bool
	want     []out
}

// wantWC is an expected completion; opcode and byte_len are compared for
// successful ones only (a failed WC carries only wr_id, status and qp_num).
type wantWC struct {
	wrID   uint64
	status ib.WCStatus
	opcode ib.WCOpcode
	len    uint32
}

// row is one packet-level test case.
type row struct {
	name     string
	setup    func(t *testing.T, r *pktRig)
	steps    []step
	wcs      []wantWC
	state    ib.QPState // RTS unless set
	counters map[Counter]uint64
	check    func(t *testing.T, r *pktRig) // memory after the steps
	tweak    rigTweak                      // of the rig's device and QP, if set
}

// runRows runs each row on a fresh QP inside its own bubble.
func runRows(t *testing.T, rows []row) {
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { c.run(t) })
		})
	}
}

func (c *row) run(t *testing.T) {
	var tweaks []rigTweak
	if c.tweak != nil {
		tweaks = append(tweaks, c.tweak)
	}
	r := newPktRig(t, tweaks...)
	if c.setup != nil {
		c.setup(t, r)
		r.sent()
		r.base = r.dev.Counters()
	}
	for i, s := range c.steps {
		switch {
		case s.progress:
			synctest.Wait() // what the peer sent is at the link
			if got, _ := r.dev.Progress(); !got {
				t.Fatalf("step %d: Progress received nothing", i)
			}
			if s.post != nil {
				if _, err := r.qp.PostSend(s.post(r)); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
		case s.post != nil:
			if _, err := r.qp.PostSend(s.post(r)); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case s.recv:
			rw := &RecvWR{WRID: 100 + uint64(i), SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 512, LKey: ib.LKey(r.key)}}}
			if _, err := r.qp.PostRecv(rw); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case s.in != nil:
			r.inject(t, s.in)
		default:
			time.Sleep(s.sleep)
		}
		checkOut(t, r.sent(), s.want)
	}
	checkWCs(t, r, c.wcs)
	want := c.state
	if want == 0 {
		want = ib.QPStateRTS
	}
	if st := r.qp.State(); st != want {
		t.Errorf("QP state %v, want %v", st, want)
	}
	now := r.dev.Counters()
	for k, v := range c.counters {
		if d := now.Get(k) - r.base.Get(k); d != v {
			t.Errorf("counter %v went up by %d, want %d", k, d, v)
		}
	}
	if c.check != nil {
		c.check(t, r)
	}
}

func checkWCs(t *testing.T, r *pktRig, want []wantWC) {
	t.Helper()
	got := make([]WC, 64)
	n, err := r.cq.Poll(got)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:n]
	if len(got) != len(want) {
		t.Errorf("%d completions, want %d: %+v", len(got), len(want), got)
		return
	}
	for i, w := range want {
		g := got[i]
		bad := g.WRID != w.wrID || g.Status != w.status
		if w.status == ib.WCSuccess {
			bad = bad || g.Opcode != w.opcode || g.ByteLen != w.len
		}
		if bad {
			t.Errorf("completion %d: wr_id %d %v %v byte_len %d, want wr_id %d %v %v byte_len %d",
				i, g.WRID, g.Status, g.Opcode, g.ByteLen, w.wrID, w.status, w.opcode, w.len)
		}
	}
}
