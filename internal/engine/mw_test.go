package engine

import (
	"bytes"
	"testing"
	"testing/synctest"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// mwState is a row's memory window: a 512-byte region of the rig's PD
// registered with MW_BIND, a type 2 window, and a region without MW_BIND.
type mwState struct {
	buf     []byte
	reg     *mem.Region
	plain   *mem.Region
	win     *mem.Window
	pattern []byte
}

// init registers the regions and allocates the window; each row gets its
// own state.
func (m *mwState) init(t *testing.T, r *pktRig) {
	m.buf = make([]byte, 512)
	for i := range m.buf {
		m.buf[i] = byte(i * 3)
	}
	m.pattern = bytes.Clone(m.buf)
	var err error
	if m.reg, err = r.dev.MRs().Register(1, m.buf, ib.AccessLocalWrite|ib.AccessRemoteWrite|ib.AccessMWBind); err != nil {
		t.Fatal(err)
	}
	if m.plain, err = r.dev.MRs().Register(1, make([]byte, 64), ib.AccessLocalWrite); err != nil {
		t.Fatal(err)
	}
	if m.win, err = r.dev.MRs().AllocWindow(1, ib.MWType2); err != nil {
		t.Fatal(err)
	}
}

// key is the window's key with variant byte tag.
func (m *mwState) key(tag uint8) mem.Key { return m.win.Key()&^0xff | mem.Key(tag) }

// bind returns a signaled BIND_MW, wr_id 1, of [off, off+n) of m.buf with
// rights access and variant byte tag.
func (m *mwState) bind(off, n uint64, access ib.AccessFlags, tag uint8) func(*pktRig) *SendWR {
	return func(*pktRig) *SendWR {
		return &SendWR{WRID: 1, Opcode: ib.WRBindMW, Flags: ib.SendSignaled, BindMW: BindMW{MW: &m.win, RKey: ib.RKey(m.key(tag)),
			BindInfo: MWBindInfo{MR: &m.reg, Addr: mem.AddrOf(m.buf) + off, Length: n, MWAccessFlags: access}}}
	}
}

// localInv returns a signaled LOCAL_INV of key, wr_id 2.
func localInv(key func() mem.Key) func(*pktRig) *SendWR {
	return func(*pktRig) *SendWR {
		return &SendWR{WRID: 2, Opcode: ib.WRLocalInv, Flags: ib.SendSignaled, InvalidateRKey: ib.RKey(key())}
	}
}

// write fills the RETH of a WRITE of n bytes at offset off of m.buf
// through the window key with variant byte tag.
func (m *mwState) write(off uint64, n uint32, tag uint8) func(*pktRig, wire.Packet) {
	return func(_ *pktRig, p wire.Packet) {
		p.RETH().Encode(&wire.RETHFields{VA: mem.AddrOf(m.buf) + off, RKey: uint32(m.key(tag)), DMALength: n})
	}
}

// untouched checks that m.buf holds its pattern but for [off, off+len(b)),
// which holds b.
func (m *mwState) untouched(off int, b []byte) func(*testing.T, *pktRig) {
	return func(t *testing.T, _ *pktRig) {
		want := bytes.Clone(m.pattern)
		copy(want[off:], b)
		if !bytes.Equal(m.buf, want) {
			t.Errorf("window region holds %x,\nwant %x", m.buf, want)
		}
	}
}

// ieth fills the IETH of a SEND WITH INVALIDATE with key.
func ieth(key func() mem.Key) func(*pktRig, wire.Packet) {
	return func(_ *pktRig, p wire.Packet) { p.IETH().SetRKey(uint32(key())) }
}

// TestMWPackets binds, uses and invalidates memory windows (doc/protocol.md
// §12.5) and checks the exact packets and completions: BIND_MW and
// LOCAL_INV put nothing on the wire and complete in order (IBV_WC_BIND_MW,
// IBV_WC_LOCAL_INV); a WRITE through a window lands in its range, and
// outside the range, without the right, or after the window was
// invalidated — locally or by a SEND WITH INVALIDATE, also in the middle
// of a message — it is a remote access error (NAK code 2, IBA 9.7.5.2); a
// SEND WITH INVALIDATE naming no window is an invalid request; a bind or
// invalidation that fails completes with the Memory Management Operation
// Error (IBV_WC_MW_BIND_ERR, IBA 11.6.2) and the QP goes to the error
// state, flushing what follows.
func TestMWPackets(t *testing.T) {
	var rows []row
	add := func(f func(m *mwState) row) {
		m := &mwState{}
		c := f(m)
		setup := c.setup
		c.setup = func(t *testing.T, r *pktRig) {
			m.init(t, r)
			if setup != nil {
				setup(t, r)
			}
		}
		rows = append(rows, c)
	}
	rw := ib.AccessRemoteWrite | ib.AccessRemoteRead
	add(func(m *mwState) row {
		return row{
			name: "BIND_MW sends nothing, and a WRITE through the window lands in its range",
			steps: []step{
				{post: m.bind(64, 32, rw, 0x42)},
				{in: &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: []byte("window!!"), fill: m.write(88, 8, 0x42)},
					want: []out{ack(0, 1)}},
			},
			wcs:   []wantWC{{1, ib.WCSuccess, ib.WCBindMW, 0}},
			check: m.untouched(88, []byte("window!!")),
		}
	})
	for _, c := range []struct {
		name      string
		off       uint64
		access    ib.AccessFlags
		tag       uint8
		wantWrite bool
	}{
		{"a WRITE past the window's end is a remote access error", 92, rw, 0x42, false},
		{"a WRITE before the window's start is a remote access error", 60, rw, 0x42, false},
		{"a WRITE through a read-only window is a remote access error", 64, ib.AccessRemoteRead, 0x42, false},
		{"a WRITE with the window's allocation key is a remote access error", 64, rw, 0x41, false},
	} {
		add(func(m *mwState) row {
			tag := c.tag
			return row{
				name: c.name,
				steps: []step{
					{post: m.bind(64, 32, c.access, 0x42)},
					{in: &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: []byte("window!!"), fill: m.write(c.off, 8, tag)},
						want: []out{nak(wire.NAKRemoteAccess, 0, 0)}},
				},
				wcs:   []wantWC{{1, ib.WCSuccess, ib.WCBindMW, 0}, {0, ib.WCWRFlushErr, 0, 0}},
				state: ib.QPStateErr,
				check: m.untouched(0, nil),
			}
		})
	}
	add(func(m *mwState) row {
		return row{
			name: "LOCAL_INV between the packets of a WRITE ends the window: the rest is refused",
			steps: []step{
				{post: m.bind(0, 512, rw, 7)},
				{in: &pkt{op: wire.RCWriteFirst, psn: 0, payload: mtuBytes, fill: m.write(0, 512, 7)}},
				{post: localInv(func() mem.Key { return m.key(7) })},
				{in: &pkt{op: wire.RCWriteLast, psn: 1, ack: true, payload: mtuBytes}, want: []out{nak(wire.NAKRemoteAccess, 1, 0)}},
			},
			wcs:   []wantWC{{1, ib.WCSuccess, ib.WCBindMW, 0}, {2, ib.WCSuccess, ib.WCLocalInv, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state: ib.QPStateErr,
			check: m.untouched(0, mtuBytes),
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "SEND WITH INVALIDATE invalidates the window, which then refuses a WRITE",
			steps: []step{
				{post: m.bind(64, 32, rw, 9)},
				{in: &pkt{op: wire.RCSendOnlyWithInvalidate, psn: 0, ack: true, payload: []byte("bye"), fill: ieth(func() mem.Key { return m.key(9) })},
					want: []out{ack(0, 1)}},
				{in: &pkt{op: wire.RCWriteOnly, psn: 1, ack: true, payload: []byte("late"), fill: m.write(64, 4, 9)},
					want: []out{nak(wire.NAKRemoteAccess, 1, 1)}},
			},
			wcs:   []wantWC{{1, ib.WCSuccess, ib.WCBindMW, 0}, {0, ib.WCSuccess, ib.WCRecv, 3}},
			state: ib.QPStateErr,
			check: m.untouched(0, nil),
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "SEND WITH INVALIDATE naming a region is an invalid request; the receive WQE fails",
			steps: []step{{
				in:   &pkt{op: wire.RCSendOnlyWithInvalidate, psn: 0, ack: true, payload: []byte("bye"), fill: ieth(func() mem.Key { return m.reg.Key() })},
				want: []out{nak(wire.NAKInvalidRequest, 0, 0)},
			}},
			wcs:   []wantWC{{0, ib.WCRemInvReqErr, 0, 0}},
			state: ib.QPStateErr,
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "SEND WITH INVALIDATE of a window already invalidated is an invalid request",
			steps: []step{
				{post: m.bind(64, 32, rw, 9)},
				{post: localInv(func() mem.Key { return m.key(9) })},
				{in: &pkt{op: wire.RCSendOnlyWithInvalidate, psn: 0, ack: true, payload: []byte("bye"), fill: ieth(func() mem.Key { return m.key(9) })},
					want: []out{nak(wire.NAKInvalidRequest, 0, 0)}},
			},
			wcs:   []wantWC{{1, ib.WCSuccess, ib.WCBindMW, 0}, {2, ib.WCSuccess, ib.WCLocalInv, 0}, {0, ib.WCRemInvReqErr, 0, 0}},
			state: ib.QPStateErr,
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "a BIND_MW to a region without MW_BIND fails with MW_BIND_ERR and flushes what follows",
			steps: []step{{post: func(r *pktRig) *SendWR {
				wr := m.bind(0, 32, rw, 1)(r)
				wr.BindMW.BindInfo.MR, wr.BindMW.BindInfo.Addr = &m.plain, m.plain.Addr()
				wr.Next = sends(1)(r)
				wr.Next.WRID = 2
				return wr
			}}},
			wcs:   []wantWC{{1, ib.WCMWBindErr, 0, 0}, {2, ib.WCWRFlushErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state: ib.QPStateErr,
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "a second BIND_MW of a bound type 2 window fails with MW_BIND_ERR, the first stays",
			steps: []step{
				{post: m.bind(64, 32, rw, 1)},
				{post: m.bind(0, 32, rw, 2)},
			},
			wcs:   []wantWC{{1, ib.WCSuccess, ib.WCBindMW, 0}, {1, ib.WCMWBindErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state: ib.QPStateErr,
			check: func(t *testing.T, r *pktRig) {
				if ref, f := r.dev.MRs().AcquireRemote(m.key(1), 1, r.qp.qpn, mem.AddrOf(m.buf)+64, 32, ib.AccessRemoteWrite); f != mem.FaultNone {
					t.Errorf("the first binding after the failed second: %v", f)
				} else {
					ref.Release()
				}
			},
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "a LOCAL_INV naming no window fails with MW_BIND_ERR",
			steps: []step{
				{post: localInv(func() mem.Key { return m.key(0x33) })},
			},
			wcs:   []wantWC{{2, ib.WCMWBindErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state: ib.QPStateErr,
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "a BIND_MW behind a READ completes when the READ does, with nothing else outstanding",
			steps: []step{
				{post: read(8, m.bind(0, 32, rw, 5)), want: []out{readRequest(0, 8)}},
				{in: inRead(wire.RCReadResponseOnly, 0, []byte("12345678"))},
			},
			wcs: []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 8}, {2, ib.WCSuccess, ib.WCBindMW, 0}},
		}
	})
	add(func(m *mwState) row {
		return row{
			name: "a go-back-N resends the SENDs around a BIND_MW but does not bind again",
			steps: []step{
				{post: func(r *pktRig) *SendWR {
					s1 := sends(2)(r)
					b := m.bind(0, 32, rw, 5)(r)
					b.WRID, b.Next, s1.Next.WRID = 2, s1.Next, 3
					s1.Next = b
					return s1
				}, want: []out{sendOnly(0, 0), sendOnly(1, 1)}},
				{in: inNAK(wire.NAKPSNSequenceError, 0), want: []out{sendOnly(0, 0), sendOnly(1, 1)}},
				{in: inACK(1)},
			},
			wcs: []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {2, ib.WCSuccess, ib.WCBindMW, 0}, {3, ib.WCSuccess, ib.WCSend, 8}},
		}
	})
	runRows(t, rows)
}

// TestSendWithInvPackets: a SEND WITH INVALIDATE goes out as SEND FIRST
// (MIDDLE) and SEND LAST WITH INVALIDATE, or SEND ONLY WITH INVALIDATE,
// the last packet carrying the key in its IETH (IBA 9.3.7), also when it is
// sent again.
func TestSendWithInvPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPktRig(t)
		for i := range r.region[sendOff:] {
			r.region[sendOff+i] = byte(i)
		}
		post := func(wrID uint64, n uint32, key ib.RKey) {
			wr := &SendWR{WRID: wrID, Opcode: ib.WRSendWithInv, Flags: ib.SendSignaled, InvalidateRKey: key,
				SGList: []SGE{{Addr: mem.AddrOf(r.region) + sendOff, Length: n, LKey: ib.LKey(r.key)}}}
			if _, err := r.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
		}
		check := func(got []wire.Packet, ops []wire.Opcode, key uint32) {
			t.Helper()
			if len(got) != len(ops) {
				t.Fatalf("sent %d packets, want %d", len(got), len(ops))
			}
			for i, p := range got {
				if p.Opcode() != ops[i] {
					t.Errorf("packet %d: %v, want %v", i, p.Opcode(), ops[i])
				}
				h := p.IETH()
				if last := i == len(got)-1; (h != nil) != last || last && h.RKey() != key {
					t.Errorf("packet %d (%v): IETH %x", i, p.Opcode(), []byte(h))
				}
				if !p.Info().Is(wire.OpSend) || p.Info().Is(wire.OpLast) != p.BTH().AckRequest() {
					t.Errorf("packet %d (%v): AckReq %v", i, p.Opcode(), p.BTH().AckRequest())
				}
			}
		}
		post(1, 8, 0x1234_5601)
		check(r.sent(), []wire.Opcode{wire.RCSendOnlyWithInvalidate}, 0x1234_5601)
		r.inject(t, inACK(0))
		post(2, 300, 0xabcd_ef02)
		want := []wire.Opcode{wire.RCSendFirst, wire.RCSendLastWithInvalidate}
		check(r.sent(), want, 0xabcd_ef02)
		r.inject(t, inNAK(wire.NAKPSNSequenceError, 1))
		check(r.sent(), want, 0xabcd_ef02)
		r.inject(t, inACK(2))
		check(r.sent(), nil, 0)
		checkWCs(t, r, []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {2, ib.WCSuccess, ib.WCSend, 300}})
	})
}

// TestPostMWErrors: what posting refuses at once.
func TestPostMWErrors(t *testing.T) {
	r := newFuzzRig(t)
	win, err := r.dev.MRs().AllocWindow(1, ib.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	var none *mem.Window
	sge := []SGE{{Addr: mem.AddrOf(r.region), Length: 8, LKey: ib.LKey(r.key)}}
	for _, tc := range []struct {
		name string
		wr   SendWR
		want error
	}{
		{"BIND_MW without a window", SendWR{Opcode: ib.WRBindMW}, ErrNoMW},
		{"BIND_MW with a nil window", SendWR{Opcode: ib.WRBindMW, BindMW: BindMW{MW: &none}}, ErrNoMW},
		{"BIND_MW with data", SendWR{Opcode: ib.WRBindMW, BindMW: BindMW{MW: &win}, SGList: sge}, ErrLocalOpData},
		{"LOCAL_INV with data", SendWR{Opcode: ib.WRLocalInv, SGList: sge}, ErrLocalOpData},
		{"LOCAL_INV inline", SendWR{Opcode: ib.WRLocalInv, Flags: ib.SendInline}, ErrLocalOpData},
	} {
		if _, err := r.qp.PostSend(&tc.wr); err != tc.want {
			t.Errorf("%s: PostSend = %v, want %v", tc.name, err, tc.want)
		}
	}
	if win.Key() != win.Key()&^0xff|win.Key()&0xff || r.qp.sq.Len() != 0 {
		t.Errorf("a refused post queued something")
	}
}

// TestAckRequestBeforeLocalOp: on a clean path the requester asks for an
// ACK only where no packet follows soon; a BIND_MW or LOCAL_INV next sends
// none, so the message before it asks, or it and the operation would wait
// for the retransmission timer.
func TestAckRequestBeforeLocalOp(t *testing.T) {
	for _, c := range []struct {
		name string
		next func(m *mwState) func(*pktRig) *SendWR
		want bool
	}{
		{"a SEND next", func(*mwState) func(*pktRig) *SendWR { return sends(1) }, false},
		{"a BIND_MW next", func(m *mwState) func(*pktRig) *SendWR { return m.bind(0, 32, ib.AccessRemoteRead, 1) }, true},
		{"a LOCAL_INV next", func(m *mwState) func(*pktRig) *SendWR { return localInv(func() mem.Key { return m.key(1) }) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newPktRig(t)
				m := &mwState{}
				m.init(t, r)
				r.qp.mu.Lock()
				r.qp.req.clean = cleanPath
				r.qp.mu.Unlock()
				wr := sends(1)(r)
				wr.Flags &^= ib.SendSignaled // a signaled SEND asks anyway (ackWanted)
				wr.Next = c.next(m)(r)
				if _, err := r.qp.PostSend(wr); err != nil {
					t.Fatal(err)
				}
				if got := r.sent(); len(got) == 0 || got[0].BTH().AckRequest() != c.want {
					t.Errorf("the SEND's packet: %v, want AckReq %v", got, c.want)
				}
			})
		})
	}
}
