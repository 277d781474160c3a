package engine

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// rethAt fills a RETH for n bytes at offset off of the rig's region, under
// the key key returns.
func rethAt(key func(r *pktRig) mem.Key, off uint64, n uint32) func(*pktRig, wire.Packet) {
	return func(r *pktRig, p wire.Packet) {
		p.RETH().Encode(&wire.RETHFields{VA: mem.AddrOf(r.region) + off, RKey: uint32(key(r)), DMALength: n})
	}
}

func regionKey(r *pktRig) mem.Key { return r.key }

// fetchAdd fills the AtomicETH of a FETCH ADD of add at offset off.
func fetchAdd(off, add uint64) func(*pktRig, wire.Packet) {
	return func(r *pktRig, p wire.Packet) {
		p.AtomicETH().Encode(&wire.AtomicETHFields{VA: mem.AddrOf(r.region) + off, RKey: uint32(r.key), SwapAdd: add})
	}
}

// mtuBytes is a full packet's payload at the rig's path MTU, 256.
var mtuBytes = bytes.Repeat([]byte{0xab}, 256)

// TestResponderPackets injects request packets into a QP and checks the
// exact responses and completions: one row per responder error class.
// Statuses and NAK codes follow IBA 9.7.5.2 and its NAK code table
// (table 43) and the responder error classes of IBA 9.9.3: a sequence
// error NAKs once and keeps the QP; a duplicate SEND or WRITE is
// acknowledged again, a READ executed again, an atomic answered from its
// resource; no receive WQE is an RNR NAK (IBA 9.7.5.2.8); R_Key, bounds and rights faults are remote access errors;
// length and opcode-order faults are invalid requests; the last three move
// the QP to the error state, failing the receive WQE in use and flushing
// the rest.
func TestResponderPackets(t *testing.T) {
	readData := []byte("0123456789abcdef")
	runRows(t, []row{{
		name: "in order SEND is placed and acknowledged",
		steps: []step{{
			in:   &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("hello")},
			want: []out{ack(0, 1)},
		}},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 5}},
		counters: map[Counter]uint64{ACKSent: 1, RDMARecvs: 1},
		check: func(t *testing.T, r *pktRig) {
			if string(r.region[:5]) != "hello" {
				t.Errorf("receive buffer holds %q", r.region[:5])
			}
		},
	}, {
		name: "sequence error: PSN ahead is NAKed once with the expected PSN",
		steps: []step{{
			in:   &pkt{op: wire.RCSendOnly, psn: 2, ack: true, payload: []byte("x")},
			want: []out{nak(wire.NAKPSNSequenceError, 0, 0)},
		}, {
			in: &pkt{op: wire.RCSendOnly, psn: 3, ack: true, payload: []byte("y")},
		}, {
			in:   &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("z")},
			want: []out{ack(0, 1)},
		}},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 1}},
		counters: map[Counter]uint64{OutOfSeqRequest: 2, NAKSent: 1},
	}, {
		name: "the packet that fills a NAKed gap is acknowledged without AckReq, and the packet held past it placed",
		steps: []step{{
			in:   &pkt{op: wire.RCWriteOnly, psn: 2, ack: true, payload: []byte("c"), fill: rethAt(regionKey, 2, 1)},
			want: []out{nak(wire.NAKPSNSequenceError, 0, 0)},
		}, {
			in:   &pkt{op: wire.RCWriteOnly, psn: 0, payload: []byte("a"), fill: rethAt(regionKey, 0, 1)},
			want: []out{ack(0, 1)},
		}, {
			in:   &pkt{op: wire.RCWriteOnly, psn: 1, payload: []byte("b"), fill: rethAt(regionKey, 1, 1)},
			want: []out{ack(2, 3)},
		}},
		counters: map[Counter]uint64{OutOfSeqRequest: 1, NAKSent: 1, ACKSent: 2},
		check: func(t *testing.T, r *pktRig) {
			if string(r.region[:3]) != "abc" {
				t.Errorf("region holds %q, want \"abc\"", r.region[:3])
			}
		},
	}, {
		name: "a WRITE overtaken by a few packets is held and placed in its turn, without a NAK",
		steps: []step{{
			in: &pkt{op: wire.RCWriteFirst, psn: 1, payload: mtuBytes, fill: rethAt(regionKey, 256, 512)},
		}, {
			in: &pkt{op: wire.RCWriteOnly, psn: 0, payload: []byte("a"), fill: rethAt(regionKey, 0, 1)},
		}, {
			in:   &pkt{op: wire.RCWriteLast, psn: 2, ack: true, payload: mtuBytes},
			want: []out{ack(2, 2)},
		}},
		counters: map[Counter]uint64{OutOfSeqRequest: 1, NAKSent: 0, ACKSent: 1},
		check: func(t *testing.T, r *pktRig) {
			if r.region[0] != 'a' || !bytes.Equal(r.region[256:768], append(mtuBytes[:256:256], mtuBytes...)) {
				t.Errorf("region holds %q", r.region[:768])
			}
		},
	}, {
		name: "duplicate SEND is acknowledged again, not placed again",
		steps: []step{{
			in:   &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("once")},
			want: []out{ack(0, 1)},
		}, {
			recv: true,
		}, {
			in:   &pkt{op: wire.RCSendOnly, psn: 0, payload: []byte("twice")},
			want: []out{ack(0, 1)},
		}},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 4}},
		counters: map[Counter]uint64{DuplicateRequest: 1, ACKSent: 2},
	}, {
		name:  "duplicate READ is executed again",
		setup: func(t *testing.T, r *pktRig) { copy(r.region[100:], readData) },
		steps: []step{{
			in:   &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 100, 16)},
			want: []out{{op: wire.RCReadResponseOnly, psn: 0, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: 1, payload: readData}},
		}, {
			in:   &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 100, 16)},
			want: []out{{op: wire.RCReadResponseOnly, psn: 0, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: 1, payload: readData}},
		}},
		counters: map[Counter]uint64{DuplicateRequest: 1},
	}, {
		name:  "duplicate atomic is answered from its resource, not executed again",
		setup: func(t *testing.T, r *pktRig) { binary.NativeEndian.PutUint64(r.region[64:], 7) },
		steps: []step{{
			in:   &pkt{op: wire.RCFetchAdd, psn: 0, ack: true, fill: fetchAdd(64, 5)},
			want: []out{{op: wire.RCAtomicAcknowledge, psn: 0, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: 1, orig: 7}},
		}, {
			in:   &pkt{op: wire.RCFetchAdd, psn: 0, ack: true, fill: fetchAdd(64, 5)},
			want: []out{{op: wire.RCAtomicAcknowledge, psn: 0, syn: wire.ACKSyndrome(wire.CreditsUnlimited), msn: 1, orig: 7}},
		}},
		counters: map[Counter]uint64{DuplicateRequest: 1},
		check: func(t *testing.T, r *pktRig) {
			if v := binary.NativeEndian.Uint64(r.region[64:]); v != 12 {
				t.Errorf("target holds %d, want 12 (added once)", v)
			}
		},
	}, {
		name: "RNR: no receive WQE is an RNR NAK with min_rnr_timer; the PSN is not consumed",
		steps: []step{{
			in:   &pkt{op: wire.RCSendOnly, psn: 0, ack: true, payload: []byte("a")},
			want: []out{ack(0, 1)},
		}, {
			in:   &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("b")},
			want: []out{{op: wire.RCAcknowledge, psn: 1, syn: wire.RNRNAKSyndrome(1), msn: 1}},
		}, {
			recv: true,
		}, {
			in:   &pkt{op: wire.RCSendOnly, psn: 1, ack: true, payload: []byte("b")},
			want: []out{ack(1, 2)},
		}},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 1}, {102, ib.WCSuccess, ib.WCRecv, 1}},
		counters: map[Counter]uint64{SendRNRErr: 1, NAKSent: 0},
	}, {
		name: "bad R_Key is a remote access error",
		steps: []step{{
			in: &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: []byte("12345678"),
				fill: rethAt(func(r *pktRig) mem.Key { return r.key ^ 0xff }, 0, 8)},
			want: []out{nak(wire.NAKRemoteAccess, 0, 0)},
		}},
		wcs:      []wantWC{{0, ib.WCWRFlushErr, ib.WCRecv, 0}},
		state:    ib.QPStateErr,
		counters: map[Counter]uint64{NAKSent: 1},
	}, {
		name: "bounds: a WRITE past the region's end is a remote access error",
		steps: []step{{
			in:   &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: []byte("12345678"), fill: rethAt(regionKey, 1020, 8)},
			want: []out{nak(wire.NAKRemoteAccess, 0, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCWRFlushErr, ib.WCRecv, 0}},
		state: ib.QPStateErr,
		check: func(t *testing.T, r *pktRig) {
			if !bytes.Equal(r.region[1020:], make([]byte, 4)) {
				t.Errorf("region end written: %q", r.region[1020:])
			}
		},
	}, {
		name: "rights: a READ of a region without remote read is a remote access error",
		setup: func(t *testing.T, r *pktRig) {
			reg, err := r.dev.MRs().Register(1, r.region, ib.AccessLocalWrite|ib.AccessRemoteWrite)
			if err != nil {
				t.Fatal(err)
			}
			r.key2 = reg.Key()
		},
		steps: []step{{
			in:   &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(func(r *pktRig) mem.Key { return r.key2 }, 0, 16)},
			want: []out{nak(wire.NAKRemoteAccess, 0, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCWRFlushErr, ib.WCRecv, 0}},
		state: ib.QPStateErr,
	}, {
		name: "length: a SEND longer than its receive WQE is an invalid request; the WQE fails with LOC_LEN_ERR",
		steps: []step{{
			in: &pkt{op: wire.RCSendFirst, psn: 0, payload: mtuBytes},
		}, {
			in: &pkt{op: wire.RCSendMiddle, psn: 1, payload: mtuBytes},
		}, {
			in:   &pkt{op: wire.RCSendLast, psn: 2, ack: true, payload: []byte("overflow")},
			want: []out{nak(wire.NAKInvalidRequest, 2, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCLocLenErr, 0, 0}},
		state: ib.QPStateErr,
	}, {
		name: "length: a FIRST packet shorter than the path MTU is an invalid request (C9-94)",
		steps: []step{{
			in:   &pkt{op: wire.RCSendFirst, psn: 0, payload: []byte("short")},
			want: []out{nak(wire.NAKInvalidRequest, 0, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCRemInvReqErr, 0, 0}},
		state: ib.QPStateErr,
	}, {
		name: "length: WRITE payload longer than its RETH DMA length is an invalid request",
		steps: []step{{
			in:   &pkt{op: wire.RCWriteOnly, psn: 0, ack: true, payload: []byte("0123456789abcdef"), fill: rethAt(regionKey, 0, 8)},
			want: []out{nak(wire.NAKInvalidRequest, 0, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCWRFlushErr, ib.WCRecv, 0}},
		state: ib.QPStateErr,
	}, {
		name: "opcode order: MIDDLE without FIRST is an invalid request",
		steps: []step{{
			in:   &pkt{op: wire.RCSendMiddle, psn: 0, ack: true, payload: mtuBytes},
			want: []out{nak(wire.NAKInvalidRequest, 0, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCWRFlushErr, ib.WCRecv, 0}},
		state: ib.QPStateErr,
	}, {
		name: "opcode order: LAST with its FIRST missing is an invalid request",
		steps: []step{{
			in:   &pkt{op: wire.RCWriteLast, psn: 0, ack: true, payload: []byte("tail")},
			want: []out{nak(wire.NAKInvalidRequest, 0, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCWRFlushErr, ib.WCRecv, 0}},
		state: ib.QPStateErr,
	}, {
		name: "opcode order: a FIRST inside a SEND is an invalid request",
		steps: []step{{
			in: &pkt{op: wire.RCSendFirst, psn: 0, payload: mtuBytes},
		}, {
			in:   &pkt{op: wire.RCSendFirst, psn: 1, ack: true, payload: mtuBytes},
			want: []out{nak(wire.NAKInvalidRequest, 1, 0)},
		}},
		wcs:   []wantWC{{0, ib.WCRemInvReqErr, 0, 0}},
		state: ib.QPStateErr,
	}})
}
