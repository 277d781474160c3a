package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

var t0 = clockBase + instant(1000*time.Second)

// Until the first loss a stream is not paced at all.
func TestPacerUnpacedUntilLoss(t *testing.T) {
	var p pacer
	p.begin(t0, 10)
	for i := range 10000 {
		if !p.ready(t0) {
			t.Fatalf("unpaced pacer blocked after %d packets", i)
		}
		p.spend(1024)
	}
	if p.blocked() {
		t.Error("unpaced pacer reports blocked")
	}
}

// A loss sets the rate the requester took in order: 1000 packets of 1000
// bytes in 100 ms are 10 MB/s, which the first loss may go down to from
// what was sent (a quarter of it at most).
func TestPacerLossTakesDeliveryRate(t *testing.T) {
	var p pacer
	p.begin(t0, 10)
	p.spend(10_000_000) // 100 MB/s over the 100 ms below
	p.loss(t0.Add(100*time.Millisecond), 10+1000, 1000)
	if want := int64(25_000_000); p.rate != want {
		t.Errorf("rate %d after the loss, want %d (a quarter of the send rate bounds the 10 MB/s estimate)", p.rate, want)
	}
	p = pacer{}
	p.begin(t0, 10)
	p.spend(1_500_000) // 15 MB/s
	p.loss(t0.Add(100*time.Millisecond), 10+1000, 1000)
	if want := int64(10_000_000); p.rate != want {
		t.Errorf("rate %d after the loss, want the delivery rate %d", p.rate, want)
	}
	if p.incr != p.rate/paceGrowth || p.from != 10+1000 || p.epoch != t0.Add(100*time.Millisecond) {
		t.Errorf("after the loss: incr %d, epoch %v from %v; want rate/%d and a new epoch at the loss", p.incr, p.epoch, p.from, paceGrowth)
	}
	// Paced, one loss at most halves the rate, however low the estimate
	// (100 packets of the 1000 sent in 100 ms, 1 MB/s).
	p.spend(1_000_000)
	p.loss(t0.Add(200*time.Millisecond), 1010+100, 1000)
	if want := int64(5_000_000); p.rate != want {
		t.Errorf("rate %d after a second loss, want half of 10 MB/s", p.rate)
	}
}

// A READ asked again long after its stream ended (the requester lost the
// tail and waited for its ACK timeout) is judged by the time the stream
// spent sending, not by the wait: 1000 packets of 1000 bytes sent in
// 100 ms are 10 MB/s, though the loss came 200 ms later.
func TestPacerLossAfterTimeout(t *testing.T) {
	var p pacer
	p.begin(t0, 10)
	p.spend(1_500_000)
	p.begin(t0.Add(100*time.Millisecond), 1500) // the stream's last response
	p.loss(t0.Add(300*time.Millisecond), 10+1000, 1000)
	if want := int64(10_000_000); p.rate != want {
		t.Errorf("rate %d after a loss reported 200 ms after the stream, want the delivery rate %d over its 100 ms", p.rate, want)
	}
}

// A loss with too little sent, or too soon, leaves the rate and the epoch;
// one that shows the requester behind halves it at most — one before the
// epoch's first response counts as nothing delivered — down to the floor,
// so a stream never stalls. One that shows most of the epoch delivered in
// order (a requester that went back for a lost request) leaves it.
func TestPacerLossHalvesToFloor(t *testing.T) {
	p := pacer{rate: 64 << 20}
	p.begin(t0, 100)
	p.loss(t0.Add(time.Second), 50, 1024) // nothing sent
	p.spend(1 << 20)
	p.loss(t0.Add(time.Second), 50, 1024)
	if p.rate != 32<<20 {
		t.Errorf("rate %d after a loss before the epoch, want half of 64 MiB/s", p.rate)
	}
	p.spend(1 << 20)
	p.loss(t0.Add(time.Second+paceMinSample/2), p.from.Add(10), 1024) // too soon
	if p.rate != 32<<20 {
		t.Errorf("rate %d after a loss too soon to judge, want 32 MiB/s kept", p.rate)
	}
	now := t0.Add(2 * time.Second)
	p.spend(1 << 20)
	p.loss(now, p.from.Add(1600), 1024) // 1600 KiB of 2 MiB in order
	if p.rate != 32<<20 {
		t.Errorf("rate %d after a loss with most delivered, want 32 MiB/s kept", p.rate)
	}
	for range 20 {
		p.spend(1 << 20)
		now = now.Add(10 * time.Millisecond)
		p.loss(now, p.from.Add(10), 1024) // 10 KiB of the 1 MiB sent
	}
	if p.rate != paceMinRate {
		t.Errorf("rate %d after many losses, want the floor %d", p.rate, paceMinRate)
	}
}

// Paced, the stream sends at the rate: over a simulated second of
// 1 ms turns it sends the rate's worth of bytes (plus the first bucket),
// and the additive increase adds rate/paceGrowth.
func TestPacerRate(t *testing.T) {
	const rate = 10 << 20
	p := pacer{rate: rate, incr: rate / paceGrowth}
	var sent int64
	now := t0
	for range 1000 {
		for p.ready(now) {
			p.spend(1024)
			sent += 1024
		}
		if !p.blocked() {
			t.Fatal("pacer not ready but not blocked")
		}
		// Blocked, it looks again within a millisecond (and the part of
		// a packet it overdrew).
		most := time.Millisecond + time.Duration(1024*int64(time.Second)/p.rate)
		if nx := p.next(); !nx.After(now) || nx.After(now.Add(most)) {
			t.Fatalf("next %v, want within %v after %v", nx.Sub(now), most, now)
		}
		now = now.Add(time.Millisecond)
	}
	avg := (rate + p.rate) / 2
	if lo, hi := avg*99/100, avg*101/100+paceMinBurst+1024; sent < lo || sent > hi {
		t.Errorf("sent %d bytes in a second at %d B/s growing to %d, want %d..%d", sent, int64(rate), p.rate, lo, hi)
	}
	if want := int64(rate + rate/paceGrowth); p.rate < want*99/100 || p.rate > want*101/100 {
		t.Errorf("rate %d after a second, want about %d", p.rate, want)
	}
}

// Time shorter than a byte's worth is not lost: it counts at the next
// call (a wake-up a few nanoseconds after the last must not reset the
// clock and stall the stream).
func TestPacerSubByteCredit(t *testing.T) {
	p := pacer{rate: 1 << 20}
	p.ready(t0)
	p.tokens = 0
	now := t0
	for range 2000 {
		now = now.Add(100 * time.Nanosecond) // 0.1 byte at 1 MiB/s
		p.ready(now)
	}
	if p.tokens < 20 {
		t.Errorf("tokens %d after 200 µs at 1 MiB/s in 100 ns steps, want about 209", p.tokens)
	}
}

// A rate grown to paceMaxRate stops pacing.
func TestPacerRecovers(t *testing.T) {
	p := pacer{rate: paceMaxRate - 1, incr: 1 << 30}
	p.begin(t0, 1)
	p.ready(t0)
	p.ready(t0.Add(time.Millisecond))
	if p.rate != 0 || !p.running || p.from != 1 {
		t.Errorf("rate %d, epoch running %v from %v: want unpaced, the epoch kept", p.rate, p.running, p.from)
	}
}

func TestPacerAllocs(t *testing.T) {
	p := pacer{rate: 10 << 20, incr: 1 << 20}
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Microsecond)
		if p.ready(now) {
			p.spend(1024)
		}
		_ = p.next()
		p.begin(now, wire.PSN(5))
	})
	if n != 0 {
		t.Errorf("%v allocations per paced send", n)
	}
}

// The responder's side of pacing: a READ asked again for responses already
// sent is the loss signal, and a paced stream lets READs queue behind it
// while it holds back requests whose answers would overtake it.
func TestReadStreamRows(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 48) // 768 bytes: three responses at MTU 256
	resp := func(op wire.Opcode, psn wire.PSN, msn uint32, payload []byte) out {
		o := out{op: op, psn: psn, msn: msn, payload: payload}
		if op != wire.RCReadResponseMiddle {
			o.syn = wire.ACKSyndrome(wire.CreditsUnlimited)
		}
		return o
	}
	runRows(t, []row{{
		name:  "a READ asked again for two responses already sent restarts there and counts retransmissions: a loss on the path, no pacing",
		setup: func(t *testing.T, r *pktRig) { copy(r.region, data) },
		steps: []step{{
			in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 768)},
			want: []out{resp(wire.RCReadResponseFirst, 0, 1, data[:256]), resp(wire.RCReadResponseMiddle, 1, 1, data[256:512]),
				resp(wire.RCReadResponseLast, 2, 1, data[512:])},
		}, {
			in:   &pkt{op: wire.RCReadRequest, psn: 1, ack: true, fill: rethAt(regionKey, 256, 512)},
			want: []out{resp(wire.RCReadResponseFirst, 1, 1, data[256:512]), resp(wire.RCReadResponseLast, 2, 1, data[512:])},
		}},
		counters: map[Counter]uint64{DuplicateRequest: 1, RetransmittedPkts: 2},
		check: func(t *testing.T, r *pktRig) {
			if s := &r.qp.resp.sent; s.epoch != 0 || r.qp.resp.pace.rate != 0 {
				t.Errorf("loss epoch %d, pace rate %d after two responses asked again, want no loss signal, unpaced", s.epoch, r.qp.resp.pace.rate)
			}
		},
	}, {
		name:  "a READ asked again for paceLossRun responses is a loss signal (judged once an epoch has run)",
		setup: func(t *testing.T, r *pktRig) { copy(r.region, bytes.Repeat(data, 2)) },
		steps: []step{{
			in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 1024)},
			want: []out{resp(wire.RCReadResponseFirst, 0, 1, data[:256]), resp(wire.RCReadResponseMiddle, 1, 1, data[256:512]),
				resp(wire.RCReadResponseMiddle, 2, 1, data[512:]), resp(wire.RCReadResponseLast, 3, 1, data[:256])},
		}, {
			in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 1024)},
			want: []out{resp(wire.RCReadResponseFirst, 0, 1, data[:256]), resp(wire.RCReadResponseMiddle, 1, 1, data[256:512]),
				resp(wire.RCReadResponseMiddle, 2, 1, data[512:]), resp(wire.RCReadResponseLast, 3, 1, data[:256])},
		}},
		counters: map[Counter]uint64{DuplicateRequest: 1, RetransmittedPkts: 4},
		check: func(t *testing.T, r *pktRig) {
			if s := &r.qp.resp.sent; s.epoch != 1 {
				t.Errorf("loss epoch %d after four responses asked again, want 1", s.epoch)
			}
		},
	}, {
		name: "READs queue behind a paced stream, a SEND waits for it, all go in PSN order",
		setup: func(t *testing.T, r *pktRig) {
			copy(r.region, data)
			r.qp.resp.pace = pacer{rate: 1 << 20, last: monoNow()} // an empty bucket
		},
		steps: []step{{
			in: &pkt{op: wire.RCReadRequest, psn: 0, ack: true, fill: rethAt(regionKey, 0, 16)},
		}, {
			in: &pkt{op: wire.RCReadRequest, psn: 1, ack: true, fill: rethAt(regionKey, 16, 16)},
		}, {
			in: &pkt{op: wire.RCSendOnly, psn: 2, ack: true, payload: []byte("after")},
		}, {
			sleep: 10 * time.Millisecond,
			want: []out{resp(wire.RCReadResponseOnly, 0, 1, data[:16]), resp(wire.RCReadResponseOnly, 1, 2, data[16:32]),
				ack(2, 3)},
		}},
		wcs:      []wantWC{{0, ib.WCSuccess, ib.WCRecv, 5}},
		counters: map[Counter]uint64{DuplicateRequest: 0, RetransmittedPkts: 0},
	}})
}

// A waiting stream woken late gets what it is owed, beyond the bucket's
// depth, so a busy host's late timers do not lower the rate; an idle
// stream gets a bucket's depth at most.
func TestPacerLateWake(t *testing.T) {
	const rate = 10 << 20
	p := pacer{rate: rate}
	p.ready(t0)
	p.tokens = 0
	if p.ready(t0) {
		t.Fatal("ready with an empty bucket")
	}
	p.ready(t0.Add(15 * time.Millisecond))
	if want := int64(rate) * 15 / 1000; p.tokens != want {
		t.Errorf("tokens %d after a wake-up 15 ms late, want the %d owed (depth %d)", p.tokens, want, p.depth())
	}
	p.ready(t0.Add(30 * time.Millisecond)) // not waiting: capped
	if p.tokens != p.depth() {
		t.Errorf("tokens %d after idling, want the depth %d", p.tokens, p.depth())
	}
}

// DCQCN's reaction point: the first CNP cuts the measured send rate in
// half (α = 1), a CNP within the reduce period cuts nothing more, and
// without CNPs the rate climbs back — fast recovery towards the rate before
// the cut, then additive and hyper increase — until it stops pacing.
func TestCongestionCutAndRecover(t *testing.T) {
	c := congestion{on: true, sampleRate: 100 << 20}
	c.cut(t0, 0)
	if c.bucket.rate != 50<<20 || c.target != 100<<20 || c.alpha != ccAlphaOne {
		t.Fatalf("after the first CNP: rate %d target %d α %d; want half of 100 MiB/s, the target 100 MiB/s, α 1", c.bucket.rate, c.target, c.alpha)
	}
	c.cut(t0.Add(ccReducePeriod/2), 0)
	if c.bucket.rate != 50<<20 {
		t.Errorf("a CNP within the reduce period cut the rate to %d", c.bucket.rate)
	}
	if c.alpha != ccAlphaOne {
		t.Errorf("α %d after a second CNP, want it still 1", c.alpha)
	}
	// Five stages of fast recovery close 31/32 of the gap to the target.
	now := t0.Add(ccFastStages * ccIncreasePeriod)
	c.raise(now)
	if want := int64(100<<20 - (50<<20)/32); c.bucket.rate != want || c.target != 100<<20 {
		t.Errorf("after fast recovery: rate %d target %d, want %d and the target unchanged", c.bucket.rate, c.target, want)
	}
	if c.alpha >= ccAlphaOne/2 {
		t.Errorf("α %d after %v without CNPs, want it decayed below 1/2", c.alpha, now.Sub(t0))
	}
	prev := c.bucket.rate
	for i := 0; c.bucket.rate != 0; i++ {
		if i == 100 {
			t.Fatalf("rate %d still paced after 100 more stages", c.bucket.rate)
		}
		now = now.Add(ccIncreasePeriod)
		c.raise(now)
		if c.bucket.rate != 0 && c.bucket.rate <= prev {
			t.Fatalf("rate %d after %d stages did not grow from %d", c.bucket.rate, ccFastStages+i+1, prev)
		}
		prev = c.bucket.rate
	}
}
