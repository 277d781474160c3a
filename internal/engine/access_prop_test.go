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
// every right; each sits between guard bytes.
type accessRig struct {
	*fuzzRig
	others    []byte // guard | read-only | guard | other PD | guard
	ro, other []byte
	roKey     mem.Key
	otherKey  mem.Key
}

func newAccessRig(t *testing.T) *accessRig {
	r := &accessRig{fuzzRig: newFuzzRig(t), others: make([]byte, 5*1024)}
	for i := range r.others {
		r.others[i] = byte(i*7 + 3)
	}
	r.ro, r.other = r.others[1024:2048], r.others[3072:4096]
	ro, err := r.dev.MRs().Register(1, r.ro, ib.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.dev.MRs().Register(2, r.other, ib.AccessLocalWrite|ib.AccessRemoteWrite|ib.AccessRemoteRead|ib.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	r.roKey, r.otherKey = ro.Key(), other.Key()
	return r
}

// randomRequest builds a request packet with random but plausible fields:
// mostly the PSN the responder expects, one of the three regions' keys or
// a near miss, an address around one of the regions, lengths around the
// path MTU (256) and the region size.
func (r *accessRig) randomRequest(rng *rand.Rand) []byte {
	ops := []wire.Opcode{wire.RCWriteOnly, wire.RCWriteOnlyWithImmediate, wire.RCWriteFirst, wire.RCWriteMiddle,
		wire.RCWriteLast, wire.RCWriteLastWithImmediate, wire.RCSendOnly, wire.RCSendFirst, wire.RCSendMiddle,
		wire.RCSendLast, wire.RCReadRequest, wire.RCCompareSwap, wire.RCFetchAdd}
	op := ops[rng.IntN(len(ops))]
	r.qp.mu.Lock()
	psn := r.qp.resp.psn
	r.qp.mu.Unlock()
	if rng.IntN(4) == 0 {
		psn = psn.Add(uint32(rng.IntN(64)) - 32)
	}
	bufs := [][]byte{r.region, r.ro, r.other}
	keys := []mem.Key{r.key, r.roKey, r.otherKey}
	target := rng.IntN(3)
	key := keys[target]
	switch rng.IntN(8) {
	case 0:
		key ^= mem.Key(1 + rng.IntN(255)) // another tag
	case 1:
		key = keys[rng.IntN(3)] // a region other than the address's
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
	return p
}

// TestRandomRequestsStayInBounds is a property test: random requests with
// valid ICRCs — WRITEs, SENDs, READs and atomics with random keys,
// addresses, lengths and PSNs — never change memory outside the one region
// whose key, PD, bounds and rights allow it: not the guard bytes around
// it, not a region registered for remote READ only, not a region of
// another PD. And they do write the allowed region, so the property is
// not vacuous.
func TestRandomRequestsStayInBounds(t *testing.T) {
	r := newAccessRig(t)
	guard := append([]byte(nil), r.mem[:1024]...)
	others := append([]byte(nil), r.others...)
	rng := rand.New(rand.NewPCG(2026, 11))
	wcs := make([]WC, 64)
	changed := 0
	const iters = 2500
	for i := range iters {
		if r.qp.State() != ib.QPStateRTS {
			r.connect(t)
		}
		before := append([]byte(nil), r.region...)
		p := r.randomRequest(rng)
		r.inject(t, p)
		if !bytes.Equal(r.mem[:1024], guard) || !bytes.Equal(r.mem[2048:], guard) {
			t.Fatalf("packet %d (%x): bytes around the writable region changed", i, p)
		}
		if !bytes.Equal(r.others, others) {
			t.Fatalf("packet %d (%x): a region the peer may not write, or its guard, changed", i, p)
		}
		if !bytes.Equal(before, r.region) {
			changed++
		}
		r.cq.Poll(wcs)
	}
	if changed < iters/100 {
		t.Errorf("only %d of %d packets wrote the writable region: the generator misses", changed, iters)
	}
	t.Logf("%d of %d packets wrote the writable region", changed, iters)
}
