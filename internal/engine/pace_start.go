package engine

import "time"

// The start of a long READ stream (doc/protocol.md §8.7). A requester
// like rxe asks again for a lost response only at its next READ or its
// ACK timeout, 67 ms after the last response it saw, so a loss early in a
// READ of several MiB costs the rest of it: unpaced until its first loss,
// an 8 MiB READ from goverbs by rxe in the lab went out at 140 MB/s into a
// receiver taking 10-35, which lost a response after about 1,400, and
// 7,000 more went for nothing (16 % of a 20-READ run sent again). So a
// READ longer than paceBigRead from a peer whose rate is not known starts
// paced at paceStartRate, and the rate follows what the requester's next
// READ confirms: a requester that asks a new READ once the streams before
// it have all been sent has taken them, so the bytes sent since the last
// confirmation over the time since are its delivery rate. A stream that
// kept up with the rate raises it by paceConfirmGain; one that did not
// sets it to that delivery rate. On loopback the receiver's socket buffer
// takes a burst, so nothing changes there: unpaced until the first loss.
const (
	// paceBigRead is the length from which a READ starts paced: about a
	// receive queue's worth (1,000 packets of 1 KiB), which a shorter
	// READ cannot overrun alone, and whose loss a requester reports at the
	// next READ, soon.
	paceBigRead = 1 << 20
	// paceStartRate is where a long READ starts: 16 MiB/s, what Linux rxe
	// in the lab's VM takes under host load (10-35 MB/s measured).
	paceStartRate = 16 << 20
	// paceConfirmGain is the rise, in percent, of a rate a confirmed
	// stream kept up with; and how far below it a delivery rate may be
	// and still count as kept up. Small, as the next READ may be 8 MiB:
	// 10 % over a receiver's rate fills its queue by 800 KiB in that READ,
	// less than the 1,000 packets it holds.
	paceConfirmGain = 10
)

// startLong paces a READ of length bytes that starts from idle, if it is
// long, the rate is not known and the peer is not on loopback.
func (p *pacer) startLong(length uint32, loopback bool) {
	if p.rate != 0 || p.known || loopback || length <= paceBigRead {
		return
	}
	p.rate, p.incr, p.known = paceStartRate, paceStartRate/paceGrowth, true
}

// confirm takes a new READ asked when every stream had been sent. The
// bytes sent since the last confirmation, over the time since the first
// of them, is the requester's delivery rate, if it asked as soon as it
// had them; it may have waited, so a delivery rate below the pace lowers
// it only if the requester asked within half the streams' sending time
// after the last response (the time a queue the pace filled takes to
// drain). At least paceMinBytes must have been sent.
func (p *pacer) confirm(now time.Time) {
	sent, from, last := p.cBytes, p.cStart, p.lastAt
	p.cBytes, p.cStart = 0, time.Time{}
	if p.rate == 0 || sent < paceMinBytes || !last.After(from) {
		return
	}
	d := int64(float64(sent) / now.Sub(from).Seconds())
	switch {
	case d*100 >= p.rate*(100-paceConfirmGain):
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
