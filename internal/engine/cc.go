package engine

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
)

// RoCEv2 congestion control as RoCE NICs run it, DCQCN (doc/protocol.md
// §8.5; RoCEv2 Annex A17 for the CNP). A device with it on sends its
// datagrams ECN-capable (ECT(0)). As the notification point, a QP that
// receives a packet marked congestion experienced (CE) by a hop answers
// with a CNP to the sending QP, at most one per cnpInterval. As the
// reaction point, a QP that receives a CNP lowers the rate it sends at
// and, while no CNP comes, raises it back in DCQCN's stages — fast
// recovery towards the rate before the cut, then additive and hyper
// increase — until it no longer limits anything.
const (
	// cnpInterval is the least time between two CNPs of one QP (DCQCN's
	// N, 50 µs).
	cnpInterval = 50 * time.Microsecond
	// ccReducePeriod is the least time between two cuts: the CNPs of one
	// congestion event count once (mlx5's rate_reduce_monitor_period).
	ccReducePeriod = 50 * time.Microsecond
	// ccAlphaPeriod is how often α, the estimate of how much is marked,
	// decays without a CNP (DCQCN's K, 55 µs); ccAlphaShift sets its gain
	// g = 1/16.
	ccAlphaPeriod = 55 * time.Microsecond
	ccAlphaShift  = 4
	ccAlphaOne    = 1 << 16 // α = 1 in fixed point
	// ccIncreasePeriod is a stage of the rate increase (DCQCN's timer T,
	// mlx5's rpg_time_reset: 300 µs); ccFastStages stages of fast
	// recovery come first (DCQCN's F = 5).
	ccIncreasePeriod = 300 * time.Microsecond
	ccFastStages     = 5
	// ccIncreaseShift sets the additive increase, the target rate / 32
	// per stage; past 2F stages it is hyper increase, that times the
	// stages beyond F. Relative rather than DCQCN's fixed 40 Mb/s, as a
	// software NIC has no line rate.
	ccIncreaseShift = 5
	// ccSampleMin is the least time a send-rate sample covers.
	ccSampleMin = 100 * time.Microsecond
	// ccBurst is how long a full bucket sends at the rate: short, so a
	// cut takes effect within a round trip or two, as a NIC's per-packet
	// rate limiter does.
	ccBurst = 100 * time.Microsecond
)

// congestion is a QP's congestion control state. cnps and marked are
// written by the receive loop; the rest is owned by the QP's turn.
type congestion struct {
	on     bool          // DeviceConfig.Congestion; set at creation
	cnps   atomic.Uint32 // CNPs received for this QP
	marked atomic.Uint32 // CE-marked packets received for this QP

	// Notification point.
	cnpsSeen   uint32  // cnps acted on
	markedSeen uint32  // marks answered
	lastCNP    instant // when the last CNP was sent

	// Reaction point. The rate is the bucket's (0: unlimited); target is
	// the rate before the last cut, α the share of marks, in 1/65536.
	bucket    pacer
	target    int64
	alpha     int64
	lastCut   instant
	lastAlpha instant // α's last decay, or the last CNP
	lastStage instant // the last increase stage, or the last cut
	stage     int     // increase stages since the last cut
	// The send rate, sampled while unlimited: the first cut starts from it.
	charged     int64 // xmit bytes already charged to the bucket
	sampleStart instant
	sampleFrom  int64
	sampleRate  int64
}

// takeCNP counts a CNP from the receive loop for qp, if it comes from the
// QP's peer.
func (d *Device) takeCNP(qp *QP, from netip.AddrPort) {
	if peer := qp.peer.Load(); peer == nil || peer.Addr() != from.Addr() {
		d.counters.inc(DropWrongSource)
		return
	}
	d.counters.inc(RcvdPkts)
	if !qp.cc.on {
		d.counters.inc(RpCNPIgnored)
		return
	}
	d.counters.inc(RpCNPHandled)
	qp.cc.cnps.Add(1)
}

// noteECN counts a packet the receive loop accepted for qp that a hop
// marked congestion experienced.
func (d *Device) noteECN(qp *QP, m *conn.Message) {
	if m.ECN == conn.ECNCE {
		d.counters.inc(NpECNMarked)
		if qp.kind.connected { // a UD QP has no one peer to send a CNP to
			qp.cc.marked.Add(1)
		}
	}
}

// congest runs the QP's congestion control in its turn: it answers new
// marks with a CNP, cuts the rate for new CNPs and raises it as time
// passes without them.
func (qp *QP) congest(now instant) {
	c := &qp.cc
	if !c.on {
		return
	}
	if m := c.marked.Load(); m != c.markedSeen && now.Sub(c.lastCNP) >= cnpInterval {
		c.markedSeen, c.lastCNP = m, now
		qp.sendCNP()
	}
	c.sample(now, qp.xmit.bytes)
	if n := c.cnps.Load(); n != c.cnpsSeen {
		c.cnpsSeen = n
		c.cut(now, qp.xmit.bytes)
	}
	c.raise(now)
	qp.ccAllows(now) // brings the bucket up to now, so blocked and next are current
}

// sendCNP queues a CNP to the peer QP (RoCEv2 Annex A17): a BTH with
// opcode CNP, BECN set, PSN 0, then 16 reserved bytes.
func (qp *QP) sendCNP() {
	f := qp.bth(wire.CNP, 0)
	f.BECN = true
	qp.xmit.queue(qp, qp.xmit.start(qp, &f, 0))
	qp.dev.counters.inc(NpCNPSent)
}

// sample measures the send rate while it is unlimited.
func (c *congestion) sample(now instant, sent int64) {
	if c.bucket.rate != 0 {
		return
	}
	if c.sampleStart.IsZero() {
		c.sampleStart, c.sampleFrom = now, sent
		return
	}
	if el := now.Sub(c.sampleStart); el >= ccSampleMin {
		c.sampleRate = (sent - c.sampleFrom) * int64(time.Second) / int64(el)
		c.sampleStart, c.sampleFrom = now, sent
	}
}

// cut lowers the rate for a CNP: α grows towards 1, the rate before the
// cut becomes the target and the rate is cut by α/2 (DCQCN), once per
// ccReducePeriod. sent is what the QP has sent so far.
func (c *congestion) cut(now instant, sent int64) {
	c.alpha += (ccAlphaOne - c.alpha) >> ccAlphaShift
	c.lastAlpha = now
	if !c.lastCut.IsZero() && now.Sub(c.lastCut) < ccReducePeriod {
		return
	}
	rate := c.bucket.rate
	if rate == 0 {
		// Unlimited until now: start from what it sent, α from 1.
		rate, c.alpha = min(max(c.sampleRate, paceMinRate), paceMaxRate-1), ccAlphaOne
		c.charged = sent // what went unlimited is not owed
	}
	c.target = rate
	rate -= rate * c.alpha / (2 * ccAlphaOne)
	c.setRate(max(rate, paceMinRate))
	c.lastCut, c.lastStage, c.stage = now, now, 0
}

// raise decays α and steps the rate up for the time without CNPs.
func (c *congestion) raise(now instant) {
	if c.bucket.rate == 0 {
		return
	}
	for now.Sub(c.lastAlpha) >= ccAlphaPeriod {
		c.alpha -= c.alpha >> ccAlphaShift
		c.lastAlpha = c.lastAlpha.Add(ccAlphaPeriod)
	}
	for c.bucket.rate != 0 && now.Sub(c.lastStage) >= ccIncreasePeriod {
		c.lastStage = c.lastStage.Add(ccIncreasePeriod)
		c.stage++
		switch {
		case c.stage <= ccFastStages:
		case c.stage <= 2*ccFastStages:
			c.target += c.target >> ccIncreaseShift
		default:
			c.target += int64(c.stage-ccFastStages) * (c.target >> ccIncreaseShift)
		}
		c.setRate((c.bucket.rate + c.target) / 2)
	}
}

// setRate paces at rate; at paceMaxRate or more it stops pacing. What the
// bucket holds beyond the new rate's depth is dropped, so a cut holds at
// once.
func (c *congestion) setRate(rate int64) {
	if rate >= paceMaxRate {
		c.bucket, c.sampleStart = pacer{}, 0
		return
	}
	c.bucket.rate, c.bucket.burst = rate, ccBurst
	c.bucket.tokens = min(c.bucket.tokens, c.bucket.depth())
}

// ccAllows charges what the QP sent since it last looked to the bucket and
// reports whether the rate lets it send now.
func (qp *QP) ccAllows(now instant) bool {
	c := &qp.cc
	if c.bucket.rate == 0 {
		return true
	}
	if n := qp.xmit.bytes - c.charged; n > 0 {
		c.bucket.spend(int(n))
	}
	c.charged = qp.xmit.bytes
	return c.bucket.ready(now)
}
