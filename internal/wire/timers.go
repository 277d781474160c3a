package wire

import "time"

// RNRTimer is the 5-bit RNR NAK timer code (IBA 9.7.5.2.8, table 45): the
// minimum time a requester waits before retrying after an RNR NAK. It is
// also the QP's min_rnr_timer attribute.
type RNRTimer uint8

// rnrMicros is the wait in microseconds for each code. Code 0 is the longest.
// rxe's table has 61410 for code 25, a typo; the spec and the kernel enum
// name (IB_RNR_TIMER_061_44) give 61440.
var rnrMicros = [32]uint32{
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// Duration returns the wait the code stands for; only the low 5 bits count.
func (t RNRTimer) Duration() time.Duration {
	return time.Duration(rnrMicros[t&0x1f]) * time.Microsecond
}
