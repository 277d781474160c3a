package engine

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// accessRig is a fuzzRig with two more regions the peer may not write: one
// of the QP's PD registered for remote READ only, one of another PD with
// every right; each sits between guard bytes. And a region with no remote
// right of its own, reached through memory windows (doc/protocol.md
// §12.5): one bound through the QP with every right, the only range of it
// the peer may write; one bound through another QP; a read-only type 1
// window; one invalidated.
type accessRig struct {
	*fuzzRig
	others    []byte // guard | read-only | guard | other PD | guard
	ro, other []byte
	roKey     mem.Key
	otherKey  mem.Key

	wmem []byte // invalidated | writable window | other QP's window | read-only window | none
	wreg *mem.Region
	wins [4]*mem.Window // in the order of wmem
}

// Window ranges in wmem.
const (
	winWritable = 1024 // [1024, 2048)
	winOtherQP  = 2048
	winRO       = 3072 // [3072, 3584)
)

func newAccessRig(t *testing.T) *accessRig {
	r := &accessRig{fuzzRig: newFuzzRig(t), others: make([]byte, 5*1024), wmem: make([]byte, 4*1024)}
	for i := range r.others {
		r.others[i] = byte(i*7 + 3)
	}
	for i := range r.wmem {
		r.wmem[i] = byte(i*5 + 1)
	}
	r.ro, r.other = r.others[1024:2048], r.others[3072:4096]
	tbl := r.dev.MRs()
	ro, err := tbl.Register(1, r.ro, ib.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tbl.Register(2, r.other, ib.AccessLocalWrite|ib.AccessRemoteWrite|ib.AccessRemoteRead|ib.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	r.roKey, r.otherKey = ro.Key(), other.Key()
	if r.wreg, err = tbl.Register(1, r.wmem, ib.AccessLocalWrite|ib.AccessMWBind); err != nil {
		t.Fatal(err)
	}
	qp2, err := r.dev.CreateQP(1, &QPInitAttr{Type: ib.QPTypeRC, SendCQ: r.cq, RecvCQ: r.cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	if err != nil {
		t.Fatal(err)
	}
	all := ib.AccessRemoteWrite | ib.AccessRemoteRead | ib.AccessRemoteAtomic
	for i, b := range []struct {
		typ    ib.MWType
		qp     uint32
		off    uint64
		access ib.AccessFlags
	}{
		{ib.MWType2, r.qp.qpn, 0, all},
		{ib.MWType2, r.qp.qpn, winWritable, all},
		{ib.MWType2, qp2.qpn, winOtherQP, all},
		{ib.MWType1, r.qp.qpn, winRO, ib.AccessRemoteRead},
	} {
		w, err := tbl.AllocWindow(1, b.typ)
		if err != nil {
			t.Fatal(err)
		}
		r.wins[i] = w
		r.bind(t, i, b.qp, b.off, b.access)
	}
	if err := tbl.Invalidate(r.wins[0].Key(), 1, 0); err != nil {
		t.Fatal(err)
	}
	return r
}

// bind binds window i through QP qp to 1024 bytes (512 for the type 1) of
// wmem at off, with the next key.
func (r *accessRig) bind(t *testing.T, i int, qp uint32, off uint64, access ib.AccessFlags) {
	w := r.wins[i]
	n := uint64(1024)
	if w.Type() == ib.MWType1 {
		n = 512
	}
	err := w.Bind(&mem.Binding{PD: 1, QP: qp, Region: r.wreg, Addr: mem.AddrOf(r.wmem) + off, Length: n,
		Access: access, Key: w.PostNext()})
	if err != nil {
		t.Fatal(err)
	}
}

// rebindWritable binds the writable window again, with a new key, if a
// SEND WITH INVALIDATE invalidated it.
func (r *accessRig) rebindWritable(t *testing.T) {
	w := r.wins[1]
	ref, f := r.dev.MRs().AcquireRemote(w.Key(), 1, r.qp.qpn, mem.AddrOf(r.wmem)+winWritable, 0, 0)
	if f == mem.FaultNone {
		ref.Release()
		return
	}
	r.bind(t, 1, r.qp.qpn, winWritable, ib.AccessRemoteWrite|ib.AccessRemoteRead|ib.AccessRemoteAtomic)
}

// randomRequest builds a request packet with random but plausible fields:
// mostly the PSN the responder expects, one of the three regions' keys or
// a near miss, an address around one of the regions, lengths around the
// path MTU (256) and the region size.
func (r *accessRig) randomRequest(rng *rand.Rand) []byte {
	ops := []wire.Opcode{wire.RCWriteOnly, wire.RCWriteOnlyWithImmediate, wire.RCWriteFirst, wire.RCWriteMiddle,
		wire.RCWriteLast, wire.RCWriteLastWithImmediate, wire.RCSendOnly, wire.RCSendFirst, wire.RCSendMiddle,
		wire.RCSendLast, wire.RCReadRequest, wire.RCCompareSwap, wire.RCFetchAdd,
		wire.RCSendOnlyWithInvalidate, wire.RCSendLastWithInvalidate}
	op := ops[rng.IntN(len(ops))]
	r.qp.mu.Lock()
	psn := r.qp.resp.psn
	r.qp.mu.Unlock()
	if rng.IntN(4) == 0 {
		psn = psn.Add(uint32(rng.IntN(64)) - 32)
	}
	bufs := [][]byte{r.region, r.ro, r.other, r.wmem, r.wmem[winWritable:], r.wmem[winOtherQP:], r.wmem[winRO:]}
	keys := []mem.Key{r.key, r.roKey, r.otherKey, r.wins[0].Key(), r.wins[1].Key(), r.wins[2].Key(), r.wins[3].Key()}
	target := rng.IntN(len(keys))
	key := keys[target]
	switch rng.IntN(8) {
	case 0:
		key ^= mem.Key(1 + rng.IntN(255)) // another tag
	case 1:
		key = keys[rng.IntN(len(keys))] // a region or window other than the address's
	}
	va := mem.AddrOf(bufs[target]) + uint64(rng.IntN(1024+128)) - 64
	dmaLen := uint32(rng.IntN(1100))
	n := rng.IntN(257)
	switch op {
	case wire.RCWriteOnly, wire.RCWriteOnlyWithImmediate:
		if rng.IntN(4) != 0 {
			n = int(min(dmaLen, 256))
		}
	case wire.RCWriteFirst, wire.RCWriteMiddle, wire.RCSendFirst, wire.RCSendMiddle:
		n = 256
	case wire.RCReadRequest, wire.RCCompareSwap, wire.RCFetchAdd:
		n = 0
	}
	if rng.IntN(2) == 0 && (op == wire.RCCompareSwap || op == wire.RCFetchAdd) {
		va &^= 7
	}
	p, err := wire.NewPacket(make([]byte, 512), 0, &wire.BTHFields{Opcode: op, PKey: 0xffff, PSN: psn,
		AckRequest: rng.IntN(2) == 0}, n)
	if err != nil {
		panic(err)
	}
	for i := range p.Payload() {
		p.Payload()[i] = byte(rng.Uint32())
	}
	if h := p.RETH(); h != nil {
		h.Encode(&wire.RETHFields{VA: va, RKey: uint32(key), DMALength: dmaLen})
	}
	if h := p.AtomicETH(); h != nil {
		h.Encode(&wire.AtomicETHFields{VA: va, RKey: uint32(key), SwapAdd: rng.Uint64(), Compare: rng.Uint64()})
	}
	if h := p.IETH(); h != nil {
		h.SetRKey(uint32(key))
	}
	return p
}

// TestRandomRequestsStayInBounds is a property test: random requests with
// valid ICRCs — WRITEs, SENDs (with invalidate too), READs and atomics
// with random keys, addresses, lengths and PSNs — never change memory
// outside the one region and the one window range whose key, PD, QP,
// bounds and rights allow it: not the guard bytes around them, not a
// region registered for remote READ only, not a region of another PD, not
// the rest of the windows' region through its own key, a window bound
// through another QP, a read-only window or an invalidated one. And they
// do write the allowed region and window, so the property is not vacuous.
func TestRandomRequestsStayInBounds(t *testing.T) {
	r := newAccessRig(t)
	guard := append([]byte(nil), r.mem[:1024]...)
	others := append([]byte(nil), r.others...)
	wmem := append([]byte(nil), r.wmem...)
	rng := rand.New(rand.NewPCG(2026, 11))
	wcs := make([]WC, 64)
	changed, windowed := 0, 0
	const iters = 3000
	for i := range iters {
		if r.qp.State() != ib.QPStateRTS {
			r.connect(t)
		}
		r.rebindWritable(t)
		before := append([]byte(nil), r.region...)
		beforeWin := append([]byte(nil), r.wmem[winWritable:winWritable+1024]...)
		p := r.randomRequest(rng)
		r.inject(t, p)
		if !bytes.Equal(r.mem[:1024], guard) || !bytes.Equal(r.mem[2048:], guard) {
			t.Fatalf("packet %d (%x): bytes around the writable region changed", i, p)
		}
		if !bytes.Equal(r.others, others) {
			t.Fatalf("packet %d (%x): a region the peer may not write, or its guard, changed", i, p)
		}
		if !bytes.Equal(r.wmem[:winWritable], wmem[:winWritable]) || !bytes.Equal(r.wmem[winWritable+1024:], wmem[winWritable+1024:]) {
			t.Fatalf("packet %d (%x): the windows' region changed outside the writable window", i, p)
		}
		if !bytes.Equal(before, r.region) {
			changed++
		}
		if !bytes.Equal(beforeWin, r.wmem[winWritable:winWritable+1024]) {
			windowed++
		}
		r.cq.Poll(wcs)
	}
	if changed < iters/100 || windowed < iters/600 {
		t.Errorf("only %d and %d of %d packets wrote the writable region and window: the generator misses", changed, windowed, iters)
	}
	t.Logf("%d of %d packets wrote the writable region, %d the writable window", changed, iters, windowed)
}
