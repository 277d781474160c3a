package engine

import (
	"runtime"
	"sync/atomic"
)

// Task states, as rxe schedules its tasks: an idle task is run by whoever schedules
// it; scheduling a busy task arms it, so the running owner takes one more
// turn instead of losing the wake-up.
const (
	taskIdle int32 = iota
	taskBusy
	taskArmed
)

// turnEnd is how a turn ended.
type turnEnd int8

const (
	turnDone  turnEnd = iota // no work is left
	turnMore                 // the budget ran out with work left
	turnYield                // ended early for a poller to answer; the rest is owed
)

// maxInlineTurns bounds how many consecutive turns a scheduling goroutine
// (a poster, the receive loop, the timer) runs before handing the QP to the
// device worker, so one busy QP cannot hold another caller hostage.
const maxInlineTurns = 4

// task gives a QP exactly one owner at a time.
type task struct {
	state atomic.Int32
	// turn runs one bounded step of work and says how it ended.
	turn func() turnEnd
	// handoff continues the task on another goroutine; the task stays busy.
	handoff func()
}

// schedule makes sure a turn runs after this call: inline if the task is
// idle, otherwise by the current owner. It never blocks on the owner.
//
// The receive loop schedules inline too, so a QP's sending often runs on
// its goroutine. Handing the turn to the device worker instead, so that
// receiving and sending overlap, measured worse (ib_write_bw over
// loopback, medians of 3-4 on the busy 2-core machine; pinned = server on
// CPU 0 and client on CPU 1, free = unpinned): 64 KiB pinned 0.90 → 0.94
// GB/s (noise), free 0.55 → 0.41; 4 KiB pinned 0.44 → 0.23, free 0.26 →
// 0.14. A pinned tool has one processor, where a hand-off only adds a
// goroutine switch; unpinned, the two processes already fill both cores.
func (t *task) schedule() {
	if t.claim() {
		t.loop(maxInlineTurns)
	}
}

// claim makes the caller the owner of an idle task and reports true; a
// busy task it arms instead, so that its owner takes one more turn.
func (t *task) claim() bool {
	for {
		switch t.state.Load() {
		case taskIdle:
			if t.state.CompareAndSwap(taskIdle, taskBusy) {
				return true
			}
		case taskBusy:
			if t.state.CompareAndSwap(taskBusy, taskArmed) {
				return false
			}
		default: // armed: the owner will look again
			return false
		}
	}
}

// scheduleForPoller is schedule for a poller that received a QP's packets
// on its own goroutine (Device.Progress): a turn that ends for a poller
// to answer (turnYield) lets the task go and reports owed — the caller is
// that poller, who answers before it yields the processor — and the rest
// of the turn's work is the caller's to see to.
func (t *task) scheduleForPoller() (owed bool) {
	return t.claim() && t.run(maxInlineTurns, true)
}

// kick makes sure a turn runs soon without running it here: an idle task
// is handed to the device worker, a busy one is armed. A poster uses it
// when earlier work is still under way, so that the posts made until it
// yields (to poll its CQ, say) are sent by one turn in one flush: a
// doorbell rung once for many WQEs. Under GOMAXPROCS=1 the worker runs
// only when the poster yields, which is the point.
func (t *task) kick() {
	if t.claim() {
		t.handoff()
	}
}

// loop runs turns as the owner until no work is left, or hands the task
// over after limit turns that all had more work (limit < 0: no limit).
//
// A turn that ended for a poller to answer (turnYield) is owed the rest of
// its work: the task is let go, so that the poller's post runs the next
// turn itself, then the processor is yielded, and the task is taken again
// unless someone else owns it by then (whose turn does the rest).
func (t *task) loop(limit int) { t.run(limit, false) }

// run is loop; for a poller (scheduleForPoller), a turn that ends for a
// poller to answer lets the task go and ends the run, reporting owed.
func (t *task) run(limit int, poller bool) (owed bool) {
	for n := 1; ; n++ {
		switch t.turn() {
		case turnYield:
			if !t.state.CompareAndSwap(taskBusy, taskIdle) {
				break // armed: a post came already; the next turn sends it
			}
			if poller {
				return true
			}
			runtime.Gosched()
			if !t.claim() {
				return false
			}
			fallthrough
		case turnMore:
			if limit >= 0 && n >= limit {
				t.handoff()
				return false
			}
			continue
		default:
			if t.state.CompareAndSwap(taskBusy, taskIdle) {
				return false
			}
		}
		t.state.Store(taskBusy) // it was armed: take another turn
	}
}
