package toolflag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a size as perftest's -s takes one: a number (decimal, 0x
// hex or 0 octal, as strtol reads it) with K or M after it for KiB or MiB.
// A number out of int64's range, suffix included, is an error wrapping
// strconv.ErrRange.
func ParseSize(s string) (int64, error) {
	factor := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		s, factor = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "M"):
		s, factor = s[:len(s)-1], 1<<20
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64/factor || n < math.MinInt64/factor {
		return 0, &strconv.NumError{Func: "ParseSize", Num: s, Err: strconv.ErrRange}
	}
	return n * factor, nil
}

// Size is an option of a size ParseSize reads, into *P; the command
// checks its range.
type Size struct{ P *int }

func (v Size) String() string {
	if v.P == nil {
		return ""
	}
	return strconv.Itoa(*v.P)
}

func (v Size) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil || n != int64(int(n)) {
		return fmt.Errorf("not a size: a number, with K or M after it for KiB or MiB")
	}
	*v.P = int(n)
	return nil
}
