package engine

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// Send buffers in the rig's region: message i of a chain is 8 bytes of
// letter 'A'+i at sendOff+8i; READ and atomic results land at readOff and
// atomicOff.
const (
	sendOff   = 512
	readOff   = 600
	atomicOff = 640
)

func letter(i int) []byte { return bytes.Repeat([]byte{byte('A' + i)}, 8) }

// sends returns a chain of n signaled 8-byte SENDs, wr_ids 1..n.
func sends(n int) func(r *pktRig) *SendWR {
	return func(r *pktRig) *SendWR {
		var head *SendWR
		for i := n - 1; i >= 0; i-- {
			copy(r.region[sendOff+8*i:], letter(i))
			head = &SendWR{WRID: uint64(i + 1), Opcode: ib.WRSend, Flags: ib.SendSignaled, Next: head,
				SGList: []SGE{{Addr: mem.AddrOf(r.region) + sendOff + 8*uint64(i), Length: 8, LKey: ib.LKey(r.key)}}}
		}
		return head
	}
}

// The peer's region a READ or atomic names; the QP never checks it.
const (
	peerVA   = 0x10000
	peerRKey = 0x4242
)

// read returns a signaled READ of n bytes into readOff, wr_id 1, followed
// by next.
func read(n uint32, next func(r *pktRig) *SendWR) func(r *pktRig) *SendWR {
	return func(r *pktRig) *SendWR {
		wr := &SendWR{WRID: 1, Opcode: ib.WRRDMARead, Flags: ib.SendSignaled, RemoteAddr: peerVA, RKey: peerRKey,
			SGList: []SGE{{Addr: mem.AddrOf(r.region) + readOff, Length: n, LKey: ib.LKey(r.key)}}}
		if next != nil {
			wr.Next = next(r)
			wr.Next.WRID = 2
		}
		return wr
	}
}

func readRequest(psn wire.PSN, n uint32) out {
	return out{op: wire.RCReadRequest, psn: psn, reth: &wire.RETHFields{VA: peerVA, RKey: peerRKey, DMALength: n}}
}

func sendOnly(psn wire.PSN, i int) out { return out{op: wire.RCSendOnly, psn: psn, payload: letter(i)} }

// withSyndrome fills the AETH of an injected response.
func withSyndrome(s wire.Syndrome) func(*pktRig, wire.Packet) {
	return func(_ *pktRig, p wire.Packet) { p.AETH().SetSyndrome(s) }
}

func inACK(psn wire.PSN) *pkt {
	return &pkt{op: wire.RCAcknowledge, psn: psn, fill: withSyndrome(wire.ACKSyndrome(wire.CreditsUnlimited))}
}

func inNAK(code wire.NAKCode, psn wire.PSN) *pkt {
	return &pkt{op: wire.RCAcknowledge, psn: psn, fill: withSyndrome(wire.NAKSyndrome(code))}
}

func inRNR(t wire.RNRTimer, psn wire.PSN) *pkt {
	return &pkt{op: wire.RCAcknowledge, psn: psn, fill: withSyndrome(wire.RNRNAKSyndrome(t))}
}

func inRead(op wire.Opcode, psn wire.PSN, data []byte) *pkt {
	return &pkt{op: op, psn: psn, payload: data, fill: func(_ *pktRig, p wire.Packet) {
		if a := p.AETH(); a != nil {
			a.SetSyndrome(wire.ACKSyndrome(wire.CreditsUnlimited))
		}
	}}
}

// fatalNAK is the row of a NAK that fails the oldest of two SENDs with
// status and moves the QP to the error state, flushing the rest.
func fatalNAK(name string, code wire.NAKCode, status ib.WCStatus) row {
	return row{
		name: name,
		steps: []step{
			{post: sends(2), want: []out{sendOnly(0, 0), sendOnly(1, 1)}},
			{in: inNAK(code, 0)},
		},
		wcs:      []wantWC{{1, status, 0, 0}, {2, ib.WCWRFlushErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
		state:    ib.QPStateErr,
		counters: map[Counter]uint64{NAKRcvd: 1, CompleterRetryErr: 0},
	}
}

// TestCompleterPackets posts send WRs, checks the exact request packets,
// injects exact responses and checks the completions, retransmissions and
// counters: one row per completer case. Statuses follow the NAK codes of
// IBA 9.7.5.2 (table 43) and the requester error behaviour of IBA 9.9.2:
// a PSN sequence NAK retransmits from its PSN; invalid request, remote
// access and remote operational error NAKs complete the WQE with
// REM_INV_REQ_ERR, REM_ACCESS_ERR and REM_OP_ERR (any other code too) and
// move the QP to the error state; an RNR NAK waits its timer and resends,
// until rnr_retry is used up: RNR_RETRY_EXC_ERR (IBA 9.7.5.2.8); the local
// ACK timeout resends, until retry_cnt is used up: RETRY_EXC_ERR (IBA
// 9.7.6.1.3). Every response acknowledges the SENDs and WRITEs before it
// (IBA 9.7.5.1.2).
func TestCompleterPackets(t *testing.T) {
	readData := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), 9)[:300]
	// long is a READ of three responses (path MTU 256).
	long := bytes.Repeat([]byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), 22)[:768]
	// It lands at the start of the region, the only place it fits.
	readLong := func(r *pktRig) *SendWR {
		return &SendWR{WRID: 1, Opcode: ib.WRRDMARead, Flags: ib.SendSignaled, RemoteAddr: peerVA, RKey: peerRKey,
			SGList: []SGE{{Addr: mem.AddrOf(r.region), Length: 768, LKey: ib.LKey(r.key)}}}
	}
	longDone := func(t *testing.T, r *pktRig) {
		if !bytes.Equal(r.region[:768], long) {
			t.Errorf("READ placed %q", r.region[:768])
		}
	}
	runRows(t, []row{{
		name: "ACK completes a SEND",
		steps: []step{
			{post: sends(1), want: []out{sendOnly(0, 0)}},
			{in: inACK(0)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{RDMASends: 1},
	}, {
		name: "one coalesced ACK completes several WQEs",
		steps: []step{
			{post: sends(3), want: []out{sendOnly(0, 0), sendOnly(1, 1), sendOnly(2, 2)}},
			{in: inACK(2)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {2, ib.WCSuccess, ib.WCSend, 8}, {3, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{RDMASends: 3},
	}, {
		name: "PSN sequence NAK retransmits from its PSN",
		steps: []step{
			{post: sends(3), want: []out{sendOnly(0, 0), sendOnly(1, 1), sendOnly(2, 2)}},
			{in: inNAK(wire.NAKPSNSequenceError, 1), want: []out{sendOnly(1, 1), sendOnly(2, 2)}},
			{in: inACK(2)},
		},
		wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}, {2, ib.WCSuccess, ib.WCSend, 8}, {3, ib.WCSuccess, ib.WCSend, 8}},
		counters: map[Counter]uint64{NAKRcvd: 1, RcvdSeqErr: 1, CompleterRetryErr: 1},
	},
		fatalNAK("invalid request NAK: REM_INV_REQ_ERR", wire.NAKInvalidRequest, ib.WCRemInvReqErr),
		fatalNAK("remote access error NAK: REM_ACCESS_ERR", wire.NAKRemoteAccess, ib.WCRemAccessErr),
		fatalNAK("remote operational error NAK: REM_OP_ERR", wire.NAKRemoteOperation, ib.WCRemOpErr),
		fatalNAK("invalid RD request NAK on RC: REM_OP_ERR", wire.NAKInvalidRDRequest, ib.WCRemOpErr),
		fatalNAK("reserved NAK code: REM_OP_ERR", 0x1f, ib.WCRemOpErr),
		{
			name: "RNR NAK waits its timer, resends, then RNR_RETRY_EXC_ERR",
			steps: []step{
				{post: sends(1), want: []out{sendOnly(0, 0)}},
				{in: inRNR(2, 0)},              // 20 µs
				{sleep: 19 * time.Microsecond}, // the 8 µs ACK timeout passes too, and retries nothing
				{sleep: time.Microsecond, want: []out{sendOnly(0, 0)}},
				{in: inRNR(2, 0)}, // rnr_retry 1 is used up
			},
			wcs:      []wantWC{{1, ib.WCRNRRetryExcErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state:    ib.QPStateErr,
			counters: map[Counter]uint64{RcvdRNRErr: 2, RetryRNRExceededErr: 1, LocalACKTimeout: 0, CompleterRetryErr: 0},
		}, {
			name: "duplicate response is ignored and counted",
			steps: []step{
				{post: sends(1), want: []out{sendOnly(0, 0)}},
				{in: inACK(0)},
				{in: inACK(0)},
			},
			wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}},
			counters: map[Counter]uint64{DropDuplicateResponse: 1},
		}, {
			name: "late READ response, after the READ completed, is ignored and counted",
			steps: []step{
				{post: read(16, nil), want: []out{readRequest(0, 16)}},
				{in: inRead(wire.RCReadResponseOnly, 0, readData[:16])},
				{in: inRead(wire.RCReadResponseOnly, 0, readData[16:32])},
			},
			wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 16}},
			counters: map[Counter]uint64{DropDuplicateResponse: 1},
			check: func(t *testing.T, r *pktRig) {
				if !bytes.Equal(r.region[readOff:readOff+16], readData[:16]) {
					t.Errorf("late response overwrote the READ's data: %q", r.region[readOff:readOff+16])
				}
			},
		}, {
			name: "response for a PSN never sent is ignored and counted",
			steps: []step{
				{post: sends(1), want: []out{sendOnly(0, 0)}},
				{in: inACK(5)},
				{in: inACK(0)},
			},
			wcs:      []wantWC{{1, ib.WCSuccess, ib.WCSend, 8}},
			counters: map[Counter]uint64{DropUnexpectedResponse: 1},
		}, {
			name: "timeout retransmits, then RETRY_EXC_ERR",
			steps: []step{
				{post: sends(1), want: []out{sendOnly(0, 0)}},
				{sleep: 8192 * time.Nanosecond, want: []out{sendOnly(0, 0)}},
				{sleep: 8192 * time.Nanosecond}, // retry_cnt 1 is used up
			},
			wcs:      []wantWC{{1, ib.WCRetryExcErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state:    ib.QPStateErr,
			counters: map[Counter]uint64{LocalACKTimeout: 2, CompleterRetryErr: 1, RetryExceededErr: 1},
		}, {
			name: "READ responses place their data; the last one completes the READ",
			steps: []step{
				{post: read(300, nil), want: []out{readRequest(0, 300)}},
				{in: inRead(wire.RCReadResponseFirst, 0, readData[:256])},
				{in: inRead(wire.RCReadResponseLast, 1, readData[256:])},
			},
			wcs: []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 300}},
			check: func(t *testing.T, r *pktRig) {
				if !bytes.Equal(r.region[readOff:readOff+300], readData) {
					t.Errorf("READ placed %q", r.region[readOff:readOff+300])
				}
			},
		}, {
			name: "a READ response overtaken by a few is placed in its turn, without asking again",
			steps: []step{
				{post: readLong, want: []out{readRequest(0, 768)}},
				{in: inRead(wire.RCReadResponseMiddle, 1, long[256:512])},
				{in: inRead(wire.RCReadResponseFirst, 0, long[:256])},
				{in: inRead(wire.RCReadResponseLast, 2, long[512:])},
			},
			wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 768}},
			counters: map[Counter]uint64{CompleterRetryErr: 0, DropUnexpectedResponse: 0},
			check:    longDone,
		}, {
			name: "a stale READ stream keeps the timer off while the SEND behind the READ waits for its ACK",
			steps: []step{
				{post: read(300, sends(1)), want: []out{readRequest(0, 300), sendOnly(2, 0)}},
				{in: inRead(wire.RCReadResponseFirst, 0, readData[:256])},
				{in: inRead(wire.RCReadResponseLast, 1, readData[256:])},
				// The responder serves a READ asked again before it
				// acknowledges the SEND, for longer than the timeout.
				{sleep: 6 * time.Microsecond},
				{in: inRead(wire.RCReadResponseFirst, 0, readData[:256])},
				{sleep: 6 * time.Microsecond},
				{in: inRead(wire.RCReadResponseLast, 1, readData[256:])},
				{sleep: 6 * time.Microsecond},
				{in: inACK(2)},
			},
			wcs:      []wantWC{{1, ib.WCSuccess, ib.WCRDMARead, 300}, {2, ib.WCSuccess, ib.WCSend, 8}},
			counters: map[Counter]uint64{DropDuplicateResponse: 2, LocalACKTimeout: 0},
		}, {
			name: "READ response of the wrong length: BAD_RESP_ERR",
			steps: []step{
				{post: read(16, nil), want: []out{readRequest(0, 16)}},
				{in: inRead(wire.RCReadResponseOnly, 0, readData[:8])},
			},
			wcs:   []wantWC{{1, ib.WCBadRespErr, 0, 0}, {0, ib.WCWRFlushErr, 0, 0}},
			state: ib.QPStateErr,
		}, {
			name: "atomic ACK returns the original value in host order",
			steps: []step{
				{post: func(r *pktRig) *SendWR {
					return &SendWR{WRID: 1, Opcode: ib.WRAtomicFetchAndAdd, Flags: ib.SendSignaled, RemoteAddr: peerVA, RKey: peerRKey,
						CompareAdd: 3, SGList: []SGE{{Addr: mem.AddrOf(r.region) + atomicOff, Length: 8, LKey: ib.LKey(r.key)}}}
				}, want: []out{{op: wire.RCFetchAdd, psn: 0}}},
				{in: &pkt{op: wire.RCAtomicAcknowledge, psn: 0, fill: func(_ *pktRig, p wire.Packet) {
					p.AETH().SetSyndrome(wire.ACKSyndrome(wire.CreditsUnlimited))
					p.AtomicAckETH().SetOrigData(0x0102030405060708)
				}}},
			},
			wcs: []wantWC{{1, ib.WCSuccess, ib.WCFetchAdd, 8}},
			check: func(t *testing.T, r *pktRig) {
				if v := binary.NativeEndian.Uint64(r.region[atomicOff:]); v != 0x0102030405060708 {
					t.Errorf("original value 0x%x placed", v)
				}
			},
		}})
}
