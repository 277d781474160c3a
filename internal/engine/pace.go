package engine

import (
	"time"

	"github.com/goverbs/goverbs/internal/wire"
)

// Pacing of READ response streams. A READ requester acknowledges nothing,
// so a responder sending at host speed into a slower receiver (Linux rxe in
// a VM, a loaded core) overruns its queue, and go-back-N (doc/protocol.md §8.3)
// makes the requester ask again from the first lost PSN — every response
// after the loss was wasted. The one loss signal is a READ asked again for
// PSNs already sent. The pacer turns it into a rate: unlimited until the
// first loss, then a token bucket whose rate backs off to what the receiver
// took in order (multiplicative decrease) and grows slowly while no loss
// comes (additive increase), as TCP's congestion avoidance does per RTT.
const (
	// paceMinRate bounds the backed-off rate below, so a lone loss on a
	// fast link does not stall the stream: 1 MiB/s.
	paceMinRate = 1 << 20
	// paceMaxRate is where a recovered rate stops pacing altogether.
	paceMaxRate = 8 << 30
	// paceBurst is how long a full bucket sends at the rate; with
	// paceMinBurst below, it sets the bucket's depth. A stream catches up
	// after a late wake-up by at most this much, and Go timers fire a
	// millisecond or more late on a busy host, so a shallower bucket would
	// not reach the rate.
	paceBurst = 5 * time.Millisecond
	// paceMinBurst is the least a full bucket holds, in bytes: a burst a
	// receiver's ring takes without loss (64 packets of 1 KiB).
	paceMinBurst = 64 << 10
	// paceMaxStep bounds the time one credit counts: for the rate's growth,
	// as time without streams to send shows nothing about the receiver,
	// and for a waiting stream's catch-up after a late wake-up.
	paceMaxStep = 20 * time.Millisecond
	// paceMinSample is the shortest epoch whose delivery rate is trusted.
	paceMinSample = time.Millisecond
	// paceMinBytes is the least a confirmation weighs (pace_start.go).
	paceMinBytes = 256 << 10
	// paceLossRun is the fewest responses a READ asked again must ask
	// for to signal a loss to the pacer. A receiver that falls behind
	// drops runs of responses, a queue's tail, and a go-back-N requester
	// (rxe) asks for the rest of the READ; a loss on the path takes one
	// or two, which goverbs asks for alone (doc/protocol.md §8.3), and
	// backing off for each brought 64 KiB READs between goverbs devices
	// over a link losing 3 % to the 1 MiB/s floor.
	paceLossRun = 4
	// paceGrowth is the additive increase: the rate set by a loss, divided
	// by it, is added per second of sending (1/8: doubled in eight seconds
	// without loss).
	paceGrowth = 8
)

// pacer is a token bucket with an adaptive rate. Owned by the QP's turn.
type pacer struct {
	rate   int64         // bytes per second; 0: unpaced (no loss seen, or recovered)
	burst  time.Duration // how long a full bucket sends at the rate; 0: paceBurst
	incr   int64         // additive increase, bytes per second per second
	tokens int64         // bytes that may be sent now; negative when overdrawn
	last   instant       // when tokens were last credited
	// waiting is set while a stream waits for tokens: what a late wake-up
	// owes it is credited beyond the bucket's depth, since the receiver
	// kept draining meanwhile.
	waiting bool
	// The epoch: sending since the streams last started from idle or the
	// last loss. A loss estimates the receiver's rate from it; it outlives
	// the streams, as a READ asked again comes after its responses.
	epoch   instant
	from    wire.PSN // of the epoch's first response
	sent    int64    // bytes sent in the epoch
	running bool     // streams have been sending since the epoch began
	lastAt  instant  // when the epoch's last response was sent
	// good is the last rate a confirmation showed kept up with
	// (pace_start.go).
	good int64
	// What the next confirmation weighs: bytes sent since the last one
	// (or a loss), from when the first of them was.
	cStart instant
	cBytes int64
}

// begin starts an epoch at the response psn, unless the streams are
// running, and notes that a response is sent now.
func (p *pacer) begin(now instant, psn wire.PSN) {
	if !p.running {
		p.epoch, p.from, p.sent, p.running = now, psn, 0, true
	}
	if p.cStart.IsZero() {
		p.cStart = now
	}
	p.lastAt = now
}

// idle notes that the streams ran out; the next begin starts an epoch.
func (p *pacer) idle() { p.running = false }

// blocked reports whether the bucket is empty: the stream waits for next.
func (p *pacer) blocked() bool { return p.rate > 0 && p.tokens <= 0 }

// depth is how many bytes a full bucket holds.
func (p *pacer) depth() int64 {
	b := p.burst
	if b == 0 {
		b = paceBurst
	}
	return max(p.rate*int64(b)/int64(time.Second), paceMinBurst)
}

// ready credits the time since the last credit and reports whether a
// packet may be sent now.
func (p *pacer) ready(now instant) bool {
	if p.rate == 0 {
		return true
	}
	if p.last.IsZero() {
		p.tokens, p.last = p.depth(), now
		return true
	}
	dt := min(now.Sub(p.last), paceMaxStep)
	// Credit whole bytes only; the rest of dt counts at the next call.
	if credit := p.rate * int64(dt) / int64(time.Second); credit > 0 {
		limit := p.depth()
		if p.waiting {
			limit = max(limit, p.tokens+credit)
		}
		p.last, p.waiting = now, false
		p.tokens = min(p.tokens+credit, limit)
		p.rate += p.incr * int64(dt) / int64(time.Second)
		if p.rate >= paceMaxRate {
			*p = pacer{epoch: p.epoch, from: p.from, sent: p.sent, running: p.running, lastAt: p.lastAt,
				good: p.good, cStart: p.cStart, cBytes: p.cBytes}
		}
	}
	if p.tokens > 0 {
		return true
	}
	p.waiting = true
	return false
}

// spend takes n bytes sent.
func (p *pacer) spend(n int) {
	p.sent += int64(n)
	p.cBytes += int64(n)
	if p.rate > 0 {
		p.tokens -= int64(n)
	}
}

// next returns when a blocked stream should look again: once the bucket
// holds a millisecond's worth, or half its depth if that is less. A
// wake-up then sends a burst rather than a packet, yet the stream never
// falls silent for long: a requester's ACK timer runs while it waits for
// the next response, and its timeout would look like a loss.
func (p *pacer) next() instant {
	owed := min(p.depth()/2, p.rate/1000) - p.tokens
	return p.last.Add(time.Duration(owed * int64(time.Second) / p.rate))
}

// loss weighs a READ asked again from psn for more than a few responses
// (repeatRead: a lone loss on the path says nothing of the requester). It
// backs the rate off only if the requester fell behind: if what it took
// in order since the last signal — the responses before psn — is less
// than three quarters of what the epoch sent. A requester that goes back
// for a lost request asks again for READs it is still receiving, and
// backing off for those brought 64 KiB READs between goverbs devices over
// a lossy link to the floor. The new rate is that delivery rate, kept
// between the current rate and a fraction of it: half, or a quarter at
// the first loss, whose current rate is only the epoch's send rate. The
// rates are over the time the epoch spent sending, up to its last
// response: a READ asked again only after the requester's ACK timeout
// (its last responses were lost) comes long after, and counting that wait
// made a loopback stream that lost its tail once crawl at a tenth of its
// speed for seconds. A burst the epoch sent in less than paceMinSample is
// measured up to now: the requester's pace is what took the time (a
// responder on a fast link sends 4 MiB in a millisecond). An epoch shorter
// than paceMinSample, or that sent less than paceMinBytes, is left to
// grow. A new epoch starts at psn.
func (p *pacer) loss(now instant, psn wire.PSN, mtu uint32) {
	end := now
	if p.lastAt.After(p.epoch) {
		end = p.lastAt
	}
	if end.Sub(p.epoch) < paceMinSample {
		end = now
	}
	el := end.Sub(p.epoch)
	if !p.epoch.IsZero() && (el < paceMinSample || p.sent < paceMinBytes) {
		return
	}
	if !p.epoch.IsZero() {
		var delivered int64
		if d := psn.Diff(p.from); d > 0 {
			delivered = min(int64(d)*int64(mtu), p.sent)
		}
		if delivered*4 < p.sent*3 {
			p.backOff(int64(float64(delivered)/el.Seconds()), int64(float64(p.sent)/el.Seconds()))
		}
	}
	p.epoch, p.from, p.sent, p.running = now, psn, 0, true
	p.cStart, p.cBytes = 0, 0
}

// backOff sets the rate after a loss that showed the requester falling
// behind: its delivery rate, bounded by the current rate (the send rate
// if unpaced) and half of it (a quarter if unpaced).
func (p *pacer) backOff(delivered, sendRate int64) {
	cur, least := p.rate, p.rate/2
	if cur == 0 {
		cur = min(paceMaxRate, sendRate)
		least = cur / 4
	}
	r := max(min(max(delivered, least), cur), paceMinRate)
	*p = pacer{rate: r, incr: r / paceGrowth, lastAt: p.lastAt, good: p.good}
}
