package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// respRead executes an RDMA READ request: it takes a responder resource and
// streams the response packets.
func (qp *QP) respRead(p wire.Packet, psn wire.PSN) respError {
	if qp.attr.AccessFlags&ib.AccessRemoteRead == 0 || len(qp.resp.res) == 0 {
		return errInvalidRequest // no right, or max_dest_rd_atomic 0 (ROCEV2.md §12.3 steps 3-4)
	}
	reth := p.RETH()
	n := reth.DMALength()
	if n > MaxMsgSize {
		return errInvalidRequest
	}
	if n > 0 {
		ref, f := qp.dev.mrs.Acquire(mem.Key(reth.RKey()), qp.pd, reth.VA(), uint64(n), mem.RemoteRead)
		if f != mem.FaultNone {
			return errRemoteAccess
		}
		ref.Release()
	}
	npkts := max(1, (n+qp.mtu-1)/qp.mtu)
	res := qp.takeResource()
	*res = resource{kind: wire.OpRead, first: psn, last: psn.Add(npkts - 1), va: reth.VA(), rkey: reth.RKey(), length: n}
	qp.resp.msn++
	qp.resp.psn = res.last.Next()
	return qp.readResponses(reth.VA(), reth.RKey(), n, psn)
}

// readResponses sends the READ response packets for length bytes at va,
// numbered from psn: FIRST/MIDDLE/LAST or ONLY by position (ROCEV2.md §5.2).
// The key is checked again for every packet, so a region deregistered
// mid-read is caught.
func (qp *QP) readResponses(va uint64, rkey, length uint32, psn wire.PSN) respError {
	qp.sendPendingACK()
	var off uint32
	for started := false; ; started = true {
		resid := length - off
		pos := positionOf(started, resid, qp.mtu)
		n := min(resid, qp.mtu)
		f := wire.BTHFields{Opcode: readResponseOpcodes[pos], PKey: defaultPKey, DestQP: uint32(qp.attr.DestQPN), PSN: psn}
		p := qp.xmit.start(qp, &f, int(n))
		if h := p.AETH(); h != nil {
			h.Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: qp.resp.msn})
		}
		if n > 0 {
			ref, fault := qp.dev.mrs.Acquire(mem.Key(rkey), qp.pd, va+uint64(off), uint64(n), mem.RemoteRead)
			if fault != mem.FaultNone {
				qp.xmit.abort()
				return errRemoteAccess
			}
			copy(p.Payload(), ref.Bytes())
			ref.Release()
		}
		qp.xmit.queue(qp, p)
		off += n
		if pos == posLast || pos == posOnly {
			return respOK
		}
		psn = psn.Next()
	}
}

// respAtomic executes COMPARE SWAP or FETCH ADD with a CPU atomic on the
// target and answers with the original value.
func (qp *QP) respAtomic(p wire.Packet, psn wire.PSN) respError {
	if qp.attr.AccessFlags&ib.AccessRemoteAtomic == 0 || len(qp.resp.res) == 0 {
		return errInvalidRequest
	}
	a := p.AtomicETH()
	if a.VA()%8 != 0 {
		return errInvalidRequest // misaligned atomic (ROCEV2.md §9, §12.3 step 11)
	}
	ref, f := qp.dev.mrs.Acquire(mem.Key(a.RKey()), qp.pd, a.VA(), 8, mem.RemoteAtomic)
	if f != mem.FaultNone {
		return errRemoteAccess
	}
	var orig uint64
	if p.Opcode() == wire.RCCompareSwap {
		orig = mem.CompareAndSwap(ref.Bytes(), a.Compare(), a.SwapAdd())
	} else {
		orig = mem.FetchAndAdd(ref.Bytes(), a.SwapAdd())
	}
	ref.Release()
	res := qp.takeResource()
	*res = resource{kind: wire.OpAtomic, first: psn, last: psn, va: a.VA(), rkey: a.RKey(), length: 8, orig: orig}
	qp.resp.msn++
	qp.resp.psn = psn.Next()
	qp.sendAtomicACK(psn, orig)
	return respOK
}

func (qp *QP) sendAtomicACK(psn wire.PSN, orig uint64) {
	qp.sendPendingACK()
	f := wire.BTHFields{Opcode: wire.RCAtomicAcknowledge, PKey: defaultPKey, DestQP: uint32(qp.attr.DestQPN), PSN: psn}
	p := qp.xmit.start(qp, &f, 0)
	p.AETH().Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: qp.resp.msn})
	p.AtomicAckETH().SetOrigData(orig)
	qp.xmit.queue(qp, p)
}

// takeResource returns the next responder resource slot, overwriting the
// oldest.
func (qp *QP) takeResource() *resource {
	r := &qp.resp
	res := &r.res[r.resNext]
	r.resNext = (r.resNext + 1) % len(r.res)
	return res
}

// duplicate answers a request the responder has seen (ROCEV2.md §7.6):
// SEND and WRITE are acknowledged again, READs re-executed, atomics answered
// from the resource cache. Unknown duplicates are dropped.
func (qp *QP) duplicate(p wire.Packet, psn wire.PSN) {
	info := p.Info()
	switch {
	case info.Is(wire.OpSend), info.Is(wire.OpWrite):
		qp.sendACK(wire.ACKSyndrome(wire.CreditsUnlimited), qp.resp.psn.Sub(1))
		qp.dev.counters.inc(ACKSent)
	case info.Is(wire.OpRead):
		reth := p.RETH()
		for i := range qp.resp.res {
			res := &qp.resp.res[i]
			if res.kind != wire.OpRead || !psn.InWindow(res.first, uint32(res.last.Diff(res.first))+1) {
				continue
			}
			// The retried READ must ask for a part of the original one.
			end := uint64(res.va) + uint64(res.length)
			if reth.RKey() != res.rkey || reth.VA() < res.va || reth.VA()+uint64(reth.DMALength()) > end {
				return
			}
			if e := qp.readResponses(reth.VA(), reth.RKey(), reth.DMALength(), psn); e != respOK {
				qp.respFail(e, psn)
			}
			return
		}
	case info.Is(wire.OpAtomic):
		for i := range qp.resp.res {
			if res := &qp.resp.res[i]; res.kind == wire.OpAtomic && res.first == psn {
				qp.sendAtomicACK(psn, res.orig)
				return
			}
		}
	}
}
