package memconn

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ReorderDelay is how long a datagram picked for reordering is held back
// on top of its normal delay. Reordering is done by holding back rather
// than by swapping with the next datagram: a swap would strand the last
// datagram of a burst until something else is sent, whereas holding back
// lets every datagram the sender emits within the next millisecond (a
// whole burst, for a software NIC) overtake it and still bounds its
// lateness.
const ReorderDelay = time.Millisecond

// Impairments are the random misbehaviours of a Network. Probabilities
// are per datagram sent, clamped to [0, 1]; negative durations count as
// zero. The zero value is a perfect fabric.
type Impairments struct {
	// Loss is the probability that a datagram is dropped.
	Loss float64
	// Duplicate is the probability that a datagram arrives twice.
	Duplicate float64
	// Reorder is the probability that a datagram is held back by
	// ReorderDelay so that later ones overtake it.
	Reorder float64
	// Corrupt is the probability that one random bit of a datagram is
	// flipped (both copies, if it is also duplicated).
	Corrupt float64
	// Delay is added to the delivery time of every datagram.
	Delay time.Duration
	// Jitter adds to each datagram a uniform random extra delay in
	// [0, Jitter); datagrams may then overtake each other, as they may on
	// a real network with jitter.
	Jitter time.Duration
	// Mark is the probability that an ECN-capable datagram (sent by a
	// bind with SetECN ECT(0) or ECT(1)) arrives marked congestion
	// experienced, as a congested switch marks it (RFC 3168).
	Mark float64
	// Seed seeds the PCG the decisions are drawn from. The same seed,
	// impairments and sequence of datagrams give the same decisions.
	Seed uint64
}

// pcgStream is the PCG's second seed word, fixed so that Seed alone
// selects the sequence ("goverbs" in ASCII).
const pcgStream = 0x676f7665726273

// fate is what the impairments decided for one datagram.
type fate struct {
	lose    bool
	bit     int // bit to flip, or -1
	dup     bool
	reorder bool
	mark    bool
	delay   time.Duration
}

// impairer draws fates from the seeded PCG.
type impairer struct {
	on atomic.Bool // any impairment set; lets the perfect fabric skip the lock

	mu  sync.Mutex // guards imp, pcg and rng
	imp Impairments
	pcg rand.PCG
	rng *rand.Rand
}

func (im *impairer) set(imp Impairments) {
	imp.Loss = clamp01(imp.Loss)
	imp.Duplicate = clamp01(imp.Duplicate)
	imp.Reorder = clamp01(imp.Reorder)
	imp.Corrupt = clamp01(imp.Corrupt)
	imp.Mark = clamp01(imp.Mark)
	imp.Delay = max(imp.Delay, 0)
	imp.Jitter = max(imp.Jitter, 0)
	im.mu.Lock()
	defer im.mu.Unlock()
	im.imp = imp
	im.pcg.Seed(imp.Seed, pcgStream)
	if im.rng == nil {
		im.rng = rand.New(&im.pcg)
	}
	active := imp
	active.Seed = 0
	im.on.Store(active != Impairments{})
}

func (im *impairer) get() Impairments {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.imp
}

// decide draws the fate of a datagram of size bytes, ECN-capable or not.
// The draws happen in a fixed order — loss, corruption (then the bit),
// duplication, reorder, jitter, marking — and only for the impairments
// that are set (marking: for ECN-capable datagrams), so a run is
// reproducible from the seed.
func (im *impairer) decide(size int, ect bool) fate {
	f := fate{bit: -1}
	if !im.on.Load() {
		return f
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	imp, r := &im.imp, im.rng
	f.delay = imp.Delay
	if imp.Loss > 0 && r.Float64() < imp.Loss {
		f.lose = true
		return f
	}
	if imp.Corrupt > 0 && r.Float64() < imp.Corrupt && size > 0 {
		f.bit = r.IntN(size * 8)
	}
	if imp.Duplicate > 0 && r.Float64() < imp.Duplicate {
		f.dup = true
	}
	if imp.Reorder > 0 && r.Float64() < imp.Reorder {
		f.reorder = true
		f.delay += ReorderDelay
	}
	if imp.Jitter > 0 {
		f.delay += time.Duration(r.Int64N(int64(imp.Jitter)))
	}
	if ect && imp.Mark > 0 && r.Float64() < imp.Mark {
		f.mark = true
	}
	return f
}

func clamp01(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return min(x, 1)
}

// delayQueue holds delayed datagrams in delivery-time order behind one
// runtime timer, armed for the earliest (STYLE rule 11): no goroutine
// sleeps per packet, and inside a synctest bubble the timer runs on
// virtual time.
type delayQueue struct {
	deliver func(*packet) // hands a due datagram on (Network.route)

	mu      sync.Mutex // guards the fields below
	q       packetHeap
	seq     uint64 // breaks ties so equal delays keep sending order
	timer   *time.Timer
	armed   bool
	when    time.Time // deadline the timer is armed for
	firing  bool      // a fire call is delivering; others leave it to it
	stopped bool
}

// push queues p for delivery after wait.
func (d *delayQueue) push(p *packet, wait time.Duration) {
	now := time.Now()
	at := now.Add(wait)
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		d.deliver(p) // the network is closed: routing drops and counts it
		return
	}
	p.at, p.seq = at, d.seq
	d.seq++
	heap.Push(&d.q, p)
	if !d.armed || at.Before(d.when) {
		d.arm(at, now)
	}
	d.mu.Unlock()
}

// arm sets the timer for at. Called with d.mu held.
func (d *delayQueue) arm(at, now time.Time) {
	wait := at.Sub(now)
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.fire)
	} else {
		d.timer.Reset(wait)
	}
	d.armed, d.when = true, at
}

// fire runs in the timer's goroutine: it delivers every datagram that is
// due, in order, and rearms for the next. Delivery happens without the
// lock, since it takes the destination bind's.
func (d *delayQueue) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.firing {
		return // the running fire delivers what is due and rearms
	}
	d.firing = true
	d.armed = false
	for !d.stopped && len(d.q) > 0 {
		now := time.Now()
		p := d.q[0]
		if p.at.After(now) {
			d.arm(p.at, now)
			break
		}
		heap.Pop(&d.q)
		d.mu.Unlock()
		d.deliver(p)
		d.mu.Lock()
	}
	if len(d.q) == 0 {
		// A push while this call delivered may have armed the timer,
		// and its firing returned at once: nothing is armed now, or the
		// next push would wait for that spent timer forever.
		d.armed = false
	}
	d.firing = false
}

// stop discards the queued datagrams through drop and stops the timer;
// later pushes are delivered (and so dropped) at once.
func (d *delayQueue) stop(drop func(*packet)) {
	d.mu.Lock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	q := d.q
	d.q = nil
	d.mu.Unlock()
	for _, p := range q {
		drop(p)
	}
}

// packetHeap orders packets by delivery time, then by sending order.
type packetHeap []*packet

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(*packet)) }
func (h *packetHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
