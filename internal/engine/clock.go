package engine

import "time"

// epoch is the origin of the engine's clock.
var epoch = time.Now()

// instant is a reading of the engine's clock, in nanoseconds on the
// monotonic clock (monoNow), or 0 for none (a timer not armed). The
// engine only compares and subtracts the times it reads and never shows
// them, so an integer serves, and costs less than a time.Time, whose
// arithmetic keeps a wall reading beside the monotonic one: reading the
// clock as a time.Time and adding to it were 9 % of
// BenchmarkWriteLatEngine's time.
type instant int64

// monoNow reads the clock. time.Since(epoch) reads only the monotonic
// clock (time.Now reads the wall clock too: 25 and 50 ns on the 2-core
// virtual machine of issue 10). Readings start at clockBase, far from 0,
// as those of a time.Time are from its zero value: the time since "no
// time" is ages, so that a limit on how often something happens (a CNP,
// a pacing step) lets the first one through.
func monoNow() instant { return clockBase + instant(time.Since(epoch)) }

// clockBase is the clock's reading at epoch: 2^62 ns, about 146 years,
// with as long again before an int64 overflows.
const clockBase instant = 1 << 62

// Add returns t+d.
func (t instant) Add(d time.Duration) instant { return t + instant(d) }

// Sub returns t-u.
func (t instant) Sub(u instant) time.Duration { return time.Duration(t - u) }

// Before reports whether t is before u.
func (t instant) Before(u instant) bool { return t < u }

// After reports whether t is after u.
func (t instant) After(u instant) bool { return t > u }

// IsZero reports whether t is no time.
func (t instant) IsZero() bool { return t == 0 }

// sooner returns the earlier of two deadlines; no time (zero) is never
// the earlier.
func sooner(a, b instant) instant {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
