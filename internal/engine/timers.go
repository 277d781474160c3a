package engine

import (
	"sync"
	"time"
)

// timerQueue is the device's single timer: QPs publish their earliest
// deadline and the timer goroutine schedules each QP when its deadline
// passes. It never touches QP state; the QP's turn compares its own
// deadlines with the time it is given. Stale entries (a deadline that moved
// later) only cause a harmless extra turn.
type timerQueue struct {
	mu    sync.Mutex
	h     []timerEntry // binary min-heap on when
	timer *time.Timer
	next  instant // when timer fires; zero when stopped
}

type timerEntry struct {
	when instant
	qp   *QP
}

func newTimerQueue() *timerQueue {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerQueue{timer: t}
}

// add asks for qp to be scheduled at when.
func (q *timerQueue) add(qp *QP, when instant) {
	q.mu.Lock()
	q.h = append(q.h, timerEntry{when, qp})
	q.up(len(q.h) - 1)
	if q.next.IsZero() || when.Before(q.next) {
		q.next = when
		q.timer.Reset(when.Sub(monoNow()))
	}
	q.mu.Unlock()
}

// due pops the QPs whose deadline has passed into buf and re-arms the timer
// for the rest.
func (q *timerQueue) due(now instant, buf []*QP) []*QP {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.h) > 0 && !q.h[0].when.After(now) {
		buf = append(buf, q.h[0].qp)
		q.removeAt(0)
	}
	q.next = 0
	if len(q.h) > 0 {
		q.next = q.h[0].when
		q.timer.Reset(q.next.Sub(now))
	}
	return buf
}

// remove drops every entry of qp (on destroy).
func (q *timerQueue) remove(qp *QP) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := 0; i < len(q.h); {
		if q.h[i].qp == qp {
			q.removeAt(i)
			continue
		}
		i++
	}
}

func (q *timerQueue) removeAt(i int) {
	last := len(q.h) - 1
	q.h[i] = q.h[last]
	q.h[last] = timerEntry{}
	q.h = q.h[:last]
	if i < last {
		q.down(i)
		q.up(i)
	}
}

func (q *timerQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].when.Before(q.h[p].when) {
			return
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *timerQueue) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(q.h) && q.h[l].when.Before(q.h[m].when) {
			m = l
		}
		if r := l + 1; r < len(q.h) && q.h[r].when.Before(q.h[m].when) {
			m = r
		}
		if m == i {
			return
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
}
