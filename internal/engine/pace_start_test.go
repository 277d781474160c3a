package engine

import (
	"testing"
	"time"
)

// A READ longer than paceBigRead starts paced at paceStartRate when the
// rate is not known and the peer is not on loopback; nothing else does.
func TestPacerStartLong(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        pacer
		length   uint32
		loopback bool
		want     int64
	}{
		{"long, unknown peer", pacer{}, 8 << 20, false, paceStartRate},
		{"long, on loopback", pacer{}, 8 << 20, true, 0},
		{"short", pacer{}, paceBigRead, false, 0},
		{"rate known, unpaced", pacer{known: true}, 8 << 20, false, 0},
		{"rate known, paced", pacer{rate: 5 << 20, known: true}, 8 << 20, false, 5 << 20},
	} {
		p := c.p
		p.startLong(c.length, c.loopback)
		if p.rate != c.want {
			t.Errorf("%s: rate %d, want %d", c.name, p.rate, c.want)
		}
	}
}

// The next READ asked with every stream sent confirms the streams: kept
// up with, the rate rises by a tenth; slower, with the request soon after
// the last response, it goes to the delivery rate; a request long after
// (the requester waited), or too little sent, says nothing.
func TestPacerConfirm(t *testing.T) {
	const rate = 20 << 20
	sendAt := func(p *pacer, bytes int64) time.Time {
		p.begin(t0, 0)
		p.spend(int(bytes))
		end := t0.Add(time.Duration(bytes * int64(time.Second) / p.rate))
		p.begin(end, 0)
		return end
	}
	p := pacer{rate: rate, known: true}
	end := sendAt(&p, 8<<20)
	p.confirm(end.Add(2 * time.Millisecond))
	if want := int64(rate + rate/10); p.rate != want || p.incr != want/paceGrowth {
		t.Errorf("kept up: rate %d incr %d, want %d and rate/%d", p.rate, p.incr, want, paceGrowth)
	}
	p = pacer{rate: rate, known: true}
	end = sendAt(&p, 8<<20)
	sending := end.Sub(t0)
	p.confirm(end.Add(sending / 4)) // a queue that took a quarter as long to drain
	if want := int64(float64(8<<20) / (sending + sending/4).Seconds()); p.rate != want {
		t.Errorf("fell behind: rate %d, want the delivery rate %d", p.rate, want)
	}
	p = pacer{rate: rate, known: true}
	end = sendAt(&p, 8<<20)
	p.confirm(end.Add(sending))
	if p.rate != rate {
		t.Errorf("asked long after: rate %d, want %d kept", p.rate, rate)
	}
	p = pacer{rate: rate, known: true}
	end = sendAt(&p, paceMinBytes/2)
	p.confirm(end.Add(time.Second))
	if p.rate != rate {
		t.Errorf("too little sent: rate %d, want %d kept", p.rate, rate)
	}
	if p.cBytes != 0 || !p.cStart.IsZero() {
		t.Errorf("a confirmation leaves %d bytes from %v, want none", p.cBytes, p.cStart)
	}
	p = pacer{rate: paceMaxRate - 1, known: true}
	end = sendAt(&p, 1<<30)
	p.confirm(end)
	if p.rate != 0 {
		t.Errorf("rate %d past paceMaxRate, want unpaced", p.rate)
	}
}
