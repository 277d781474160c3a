package ib

import "time"

// maxACKTimeout is the largest valid local ACK timeout exponent: the QP
// attribute is 5 bits wide.
const maxACKTimeout = 31

// LocalACKTimeout returns the local ACK timeout for the QP attribute
// timeout t (ibv_qp_attr.timeout; IBA 9.7.6.1.3): 4.096 µs × 2^t. t = 0
// disables the timer and returns 0; values above 31 are invalid and also
// return 0 with ok = false.
func LocalACKTimeout(t uint8) (d time.Duration, ok bool) {
	if t > maxACKTimeout {
		return 0, false
	}
	if t == 0 {
		return 0, true
	}
	return time.Duration(4096<<t) * time.Nanosecond, true
}
