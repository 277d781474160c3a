package engine

import (
	"testing"
	"time"
)

// A READ longer than paceBigRead that finds the stream unpaced starts
// paced, off loopback: at the last rate confirmed, or paceStartRate.
func TestPacerStartLong(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        pacer
		length   uint32
		loopback bool
		want     int64
	}{
		{"long, no rate confirmed", pacer{}, 8 << 20, false, paceStartRate},
		{"long, on loopback", pacer{}, 8 << 20, true, 0},
		{"short", pacer{}, paceBigRead, false, 0},
		{"long, a rate confirmed", pacer{good: 40 << 20}, 8 << 20, false, 40 << 20},
		{"long, paced already", pacer{rate: 5 << 20, good: 40 << 20}, 8 << 20, false, 5 << 20},
	} {
		p := c.p
		p.startLong(c.length, c.loopback)
		if p.rate != c.want {
			t.Errorf("%s: rate %d, want %d", c.name, p.rate, c.want)
		}
	}
}

// The next READ asked with every stream sent confirms the streams: kept
// up with (98 %), the rate rises by 5 % and is remembered; slower, with
// the request soon after the last response, it goes to the delivery rate;
// a request long after (the requester waited) says nothing, and too little
// sent is left for the next.
func TestPacerConfirm(t *testing.T) {
	const rate = 20 << 20
	sendAt := func(p *pacer, bytes int64) instant {
		p.begin(t0, 0)
		p.spend(int(bytes))
		end := t0.Add(time.Duration(bytes * int64(time.Second) / p.rate))
		p.begin(end, 0)
		return end
	}
	p := pacer{rate: rate}
	end := sendAt(&p, 8<<20)
	p.confirm(end.Add(time.Millisecond))
	if want := int64(rate + rate/20); p.rate != want || p.incr != want/paceGrowth || p.good != rate {
		t.Errorf("kept up: rate %d incr %d good %d, want %d, rate/%d and %d", p.rate, p.incr, p.good, want, paceGrowth, rate)
	}
	p = pacer{rate: rate}
	end = sendAt(&p, 8<<20)
	p.confirm(end.Add(end.Sub(t0) / 20)) // 95 %: a queue grew
	if want := int64(float64(8<<20) / (end.Sub(t0) * 21 / 20).Seconds()); p.rate != want {
		t.Errorf("95 %%: rate %d, want the delivery rate %d", p.rate, want)
	}
	p = pacer{rate: rate}
	end = sendAt(&p, 8<<20)
	sending := end.Sub(t0)
	p.confirm(end.Add(sending / 4)) // a queue that took a quarter as long to drain
	if want := int64(float64(8<<20) / (sending + sending/4).Seconds()); p.rate != want {
		t.Errorf("fell behind: rate %d, want the delivery rate %d", p.rate, want)
	}
	p = pacer{rate: rate}
	end = sendAt(&p, 8<<20)
	p.confirm(end.Add(sending))
	if p.rate != rate {
		t.Errorf("asked long after: rate %d, want %d kept", p.rate, rate)
	}
	p = pacer{rate: rate}
	end = sendAt(&p, paceMinBytes/2)
	p.confirm(end.Add(time.Second))
	if p.rate != rate || p.cBytes != paceMinBytes/2 {
		t.Errorf("too little sent: rate %d, %d bytes kept; want %d and %d", p.rate, p.cBytes, rate, paceMinBytes/2)
	}
	p = pacer{rate: paceMaxRate - 1}
	end = sendAt(&p, 1<<30)
	p.confirm(end)
	if p.rate != 0 {
		t.Errorf("rate %d past paceMaxRate, want unpaced", p.rate)
	}
}
