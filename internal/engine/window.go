package engine

import (
	"time"

	"github.com/goverbs/goverbs/internal/wire"
)

// The requester's send window: how many PSNs may be in flight without an
// acknowledgement (doc/protocol.md §8.4). It starts at rxe's fixed window
// and grows while growing pays: every few round trips it doubles, and it
// keeps the doubling only if the delivery rate — PSNs acknowledged per
// second while the window was full — rose with it. A receiver slower
// than the sender (rxe in a VM, a loaded core) delivers at its own rate
// whatever the window, and a larger window would only fill its queue
// until it overflows; a fast receiver behind a long round trip delivers a
// window per round trip, and gets a larger one. A loss signal — a
// go-back-N asked by a sequence NAK, an RNR NAK, a timeout or a response
// past a missing one — takes the window back to where it started, once
// per window of PSNs.
const (
	// minWindow is where a window starts and where a loss takes it back
	// (rxe's fixed limit of unacknowledged PSNs), so a loss on a lossy path, and the
	// go-back-N burst it starts, never cost more than with the fixed
	// window.
	minWindow = 128
	// maxWindow bounds a window in PSNs, and maxWindowBytes in bytes:
	// 2 MiB, about what a loopback stream needs to ride out a receiver
	// descheduled for a millisecond.
	maxWindow      = 1024
	maxWindowBytes = 2 << 20
	// probeGain is the rise of the delivery rate, in quarters, that keeps
	// a doubled window: 5/4. Less is noise, or a receiver that is the
	// bottleneck and only queues the extra packets.
	probeGain = 5
	// probeHold is how many epochs a window holds after a doubling that
	// did not pay, or after a loss, before it tries again.
	probeHold = 16
	// probeMaxDelay bounds the time a window takes to drain at the rate
	// it delivers (its round trip, by Little's law, when it is full): a
	// window that takes longer is not doubled. A larger window pays on a
	// path whose round trip is short against what the sender can fill;
	// a receiver that takes a millisecond to drain 128 PSNs — rxe in a VM
	// under host load, whose queue a doubling then fills towards overflow
	// — gains nothing from it, and its delivery rate is too noisy to tell
	// (the lab saw a probe pass there and rxe's queue overflow).
	probeMaxDelay = time.Millisecond
)

// window is the requester's adaptive send window. Owned by the QP's turn.
type window struct {
	size uint32 // PSNs that may be in flight
	base uint32 // the size before a doubling under test; size when none is
	max  uint32 // the cap, from the path MTU
	// rate is the delivery rate measured at base, in PSNs per second.
	rate int64
	hold int // epochs to wait before the next doubling
	// The epoch: the acknowledgements since start, which began at from.
	// It ends once twice the window has been acknowledged.
	start   instant
	from    wire.PSN
	limited bool // the requester stopped at the window during the epoch
	warm    bool // the epoch after a change fills the pipe and is not measured
	// recover is one past the highest PSN sent when the window last
	// shrank: loss signals for PSNs before it are of the same loss.
	recover  wire.PSN
	shrunk   bool // recover is set
	acked    wire.PSN
	hasAcked bool // acked is set
}

// init sizes a new window for the path MTU.
func (w *window) init(mtu uint32) {
	m := uint32(maxWindowBytes / max(mtu, 1))
	*w = window{size: minWindow, base: minWindow, max: min(max(m, minWindow), maxWindow)}
}

// update takes the first PSN not yet acknowledged, at now: it ends an
// epoch once twice the window has been acknowledged since it began, and
// judges the window by the epoch's delivery rate.
func (w *window) update(now instant, acked wire.PSN) {
	if w.hasAcked && acked == w.acked {
		return
	}
	w.acked, w.hasAcked = acked, true
	if w.shrunk && !acked.Less(w.recover) {
		w.shrunk = false // the loss is repaired; recover would age in PSN space
	}
	if w.start.IsZero() {
		w.start, w.from, w.limited = now, acked, false
		return
	}
	n := acked.Diff(w.from)
	if n < int32(2*w.size) {
		return
	}
	el, limited := now.Sub(w.start), w.limited
	w.start, w.from, w.limited = now, acked, false
	if w.warm {
		w.warm = false
		return
	}
	if !limited || el <= 0 {
		// The window did not hold the sender back (or no time passed,
		// on an ideal link): the rate says nothing about it. A doubling
		// under test has not been used, so it is not kept.
		w.size = w.base
		return
	}
	rate := int64(n) * int64(time.Second) / int64(el)
	if w.size > w.base {
		if rate*4 < w.rate*probeGain {
			w.size, w.hold, w.warm = w.base, probeHold, true
			return
		}
		w.base, w.hold = w.size, 0
	}
	w.rate = rate
	if w.hold > 0 {
		w.hold--
		return
	}
	if w.size < w.max && int64(w.size)*int64(time.Second) < rate*int64(probeMaxDelay) {
		w.size, w.warm = min(2*w.size, w.max), true
	}
}

// loss takes the window back to minWindow after a loss signal: the
// requester goes back to from, with PSNs up to sent already sent, and
// resends a window's worth into a receiver whose queue may still hold the
// first copies (a timeout that fired because a loaded receiver was late,
// as rxe in a VM under host load is: the lab saw its queue overflow
// behind a larger window's resend). Signals for PSNs before the last
// shrink's sent are the same loss seen again (its duplicates, the NAKs
// and timeouts of the resend) and do nothing more. The window grows back
// by doubling as before, once it has held for probeHold epochs.
func (w *window) loss(from, sent wire.PSN) {
	if w.shrunk && from.Less(w.recover) {
		return
	}
	w.size = minWindow
	w.base, w.hold, w.start = w.size, probeHold, 0
	w.warm = false
	w.recover, w.shrunk = sent, true
}

// fills reports whether sending psn leaves the window full.
func (w *window) fills(psn, acked wire.PSN) bool {
	return psn.Next().Diff(acked) >= int32(w.size)
}

// full reports whether psn is past the window from the first PSN not yet
// acknowledged, and notes that the window held the sender back.
func (w *window) full(psn, acked wire.PSN) bool {
	if psn.Diff(acked) < int32(w.size) {
		return false
	}
	w.limited = true
	return true
}
