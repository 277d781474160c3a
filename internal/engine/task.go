package engine

import "sync/atomic"

// Task states, as rxe schedules its tasks: an idle task is run by whoever schedules
// it; scheduling a busy task arms it, so the running owner takes one more
// turn instead of losing the wake-up.
const (
	taskIdle int32 = iota
	taskBusy
	taskArmed
)

// maxInlineTurns bounds how many consecutive turns a scheduling goroutine
// (a poster, the receive loop, the timer) runs before handing the QP to the
// device worker, so one busy QP cannot hold another caller hostage.
const maxInlineTurns = 4

// task gives a QP exactly one owner at a time.
type task struct {
	state atomic.Int32
	// turn runs one bounded step of work and reports whether work remains.
	turn func() (more bool)
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
	for {
		switch t.state.Load() {
		case taskIdle:
			if t.state.CompareAndSwap(taskIdle, taskBusy) {
				t.loop(maxInlineTurns)
				return
			}
		case taskBusy:
			if t.state.CompareAndSwap(taskBusy, taskArmed) {
				return
			}
		default: // armed: the owner will look again
			return
		}
	}
}

// kick makes sure a turn runs soon without running it here: an idle task
// is handed to the device worker, a busy one is armed. A poster uses it
// when earlier work is still under way, so that the posts made until it
// yields (to poll its CQ, say) are sent by one turn in one flush: a
// doorbell rung once for many WQEs. Under GOMAXPROCS=1 the worker runs
// only when the poster yields, which is the point.
func (t *task) kick() {
	for {
		switch t.state.Load() {
		case taskIdle:
			if t.state.CompareAndSwap(taskIdle, taskBusy) {
				t.handoff()
				return
			}
		case taskBusy:
			if t.state.CompareAndSwap(taskBusy, taskArmed) {
				return
			}
		default:
			return
		}
	}
}

// loop runs turns as the owner until no work is left, or hands the task
// over after limit turns that all had more work (limit < 0: no limit).
func (t *task) loop(limit int) {
	for n := 1; ; n++ {
		if t.turn() {
			if limit >= 0 && n >= limit {
				t.handoff()
				return
			}
			continue
		}
		if t.state.CompareAndSwap(taskBusy, taskIdle) {
			return
		}
		t.state.Store(taskBusy) // it was armed: take another turn
	}
}
