package engine

// The start of a long READ stream (doc/protocol.md §8.7). A requester
// like rxe asks again for a lost response only at its next READ or its
// ACK timeout, 67 ms after the last response it saw, so a loss early in a
// READ of several MiB costs the rest of it: unpaced until its first loss,
// an 8 MiB READ from goverbs by rxe in the lab went out at 140 MB/s into a
// receiver taking 10-50, which lost a response after about 1,400, and
// 7,000 more went for nothing (16 % of a 20-READ run sent again). So a
// READ longer than paceBigRead that finds the stream unpaced starts paced
// (off loopback), at the last rate confirmed or paceStartRate, and the
// rate follows what the requester's next READ confirms: a requester that
// asks a new READ once the streams before it have all been sent has taken
// them, so the bytes sent since the last confirmation over the time since
// are its delivery rate. A stream that kept up with the rate raises it by
// paceConfirmGain; one that did not sets it to that delivery rate. On
// loopback the receiver's socket buffer takes a burst, so nothing changes
// there: unpaced until the first loss.
const (
	// paceBigRead is the length from which a READ starts paced: a
	// quarter of a receive queue (1,000 packets of 1 KiB: every 1 MiB
	// READ from goverbs to rxe in the lab lost its 991st or 999th
	// response), which a shorter READ cannot overrun alone.
	paceBigRead = 256 << 10
	// paceStartRate is where a long READ starts: 16 MiB/s, what Linux rxe
	// in the lab's VM takes under host load (10-35 MB/s measured).
	paceStartRate = 16 << 20
	// paceConfirmGain is the rise, in percent, of a rate a confirmed
	// stream kept up with — delivered at least paceKeptUp percent of it.
	// Small, as the next READ may be 8 MiB: a rate 5 % over a receiver's
	// fills its queue by 400 KiB over that READ, less than the 1,000
	// packets it holds; and a delivery rate 7 % below the rate was
	// already a queue of 600 KiB growing (the lab: rxe kept 93 % of
	// 54 MB/s, and lost a response of the next READ, at 59).
	paceConfirmGain = 5
	paceKeptUp      = 98
)

// startLong paces a READ of length bytes that starts from idle, if it is
// long, the stream is unpaced and the peer is not on loopback: at the last
// rate a confirmation showed kept up with, or paceStartRate. A rate that
// grew back to unpaced without a loss says nothing about a long READ.
func (p *pacer) startLong(length uint32, loopback bool) {
	if p.rate != 0 || loopback || length <= paceBigRead {
		return
	}
	p.rate = max(p.good, paceStartRate)
	p.incr = p.rate / paceGrowth
}

// confirm takes a new READ asked when every stream had been sent. The
// bytes sent since the last confirmation, over the time since the first
// of them, is the requester's delivery rate, if it asked as soon as it
// had them; it may have waited, so a delivery rate below the pace sets it
// only if the requester asked within half the streams' sending time after
// the last response (the time a queue the pace filled takes to drain). At
// least paceMinBytes must have been sent; less is left for the next.
func (p *pacer) confirm(now instant) {
	sent, from, last := p.cBytes, p.cStart, p.lastAt
	if p.rate == 0 || sent < paceMinBytes || !last.After(from) {
		return
	}
	p.cBytes, p.cStart = 0, 0
	d := int64(float64(sent) / now.Sub(from).Seconds())
	switch {
	case d*100 >= p.rate*paceKeptUp:
		p.good = p.rate
		p.rate += p.rate * paceConfirmGain / 100
		if p.rate >= paceMaxRate {
			p.rate = 0
		}
	case now.Sub(last) < last.Sub(from)/2:
		p.rate = max(d, paceMinRate)
	default:
		return
	}
	p.incr = p.rate / paceGrowth
}
