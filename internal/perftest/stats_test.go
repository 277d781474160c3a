package perftest

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"
)

// TestLatStats checks perftest's statistics on gaps 1..10 µs between 11
// posts (halved: round trips): the two largest gaps are left out, t_max
// is the second largest.
func TestLatStats(t *testing.T) {
	l := latResult{posted: []int64{0}, halve: true}
	for gap := int64(10); gap >= 1; gap-- { // posted out of order on purpose: the gaps are sorted
		l.posted = append(l.posted, l.posted[len(l.posted)-1]+gap*2000)
	}
	s := l.stats()
	// Kept: 1..8 µs. Median of 8 values: (4+5)/2. Average 4.5.
	want := LatStats{Min: 1, Max: 9, Typical: 4.5, Avg: 4.5, Stdev: math.Sqrt(5.25), P99: 9, P999: 9}
	if math.Abs(s.Stdev-want.Stdev) > 1e-9 {
		t.Errorf("stdev %v, want %v", s.Stdev, want.Stdev)
	}
	s.Stdev = want.Stdev
	if s != want {
		t.Errorf("stats %+v\nwant  %+v", s, want)
	}
	// An odd count of kept samples has a middle one.
	l = latResult{posted: []int64{0, 1000, 3000, 6000, 10000, 15000}}
	if s := l.stats(); s.Typical != 2 || s.Min != 1 || s.Max != 4 {
		t.Errorf("odd: %+v", s)
	}
}

// TestPeakDelta: the peak is the best time per operation from a post to
// a requested completion, over completions every cqMod and the last.
func TestPeakDelta(t *testing.T) {
	// Four operations, completions requested for the 2nd and the 4th:
	// 0..1 took 10 each (20 for 2), 2..3 took 3 each (6 for 2).
	posted := []int64{0, 0, 100, 100}
	completed := []int64{20, 20, 106, 106}
	if got := peakDelta(posted, completed, 2); got != 3 {
		t.Errorf("peak delta %d, want 3", got)
	}
	// Five operations with cqMod 2: the last (odd) one is requested too.
	posted = []int64{0, 0, 0, 0, 50}
	completed = []int64{40, 40, 80, 80, 51}
	if got := peakDelta(posted, completed, 2); got != 1 {
		t.Errorf("peak delta %d, want 1 (the last operation alone)", got)
	}
}

func TestParseArgs(t *testing.T) {
	parse := func(tool string, args ...string) (Config, error) {
		return ParseArgs(tool, args, new(bytes.Buffer))
	}
	c, err := parse("ib_write_bw", "10.77.0.2", "-s", "64K", "-F", "--report_gbits", "-x", "0", "-m", "1024")
	if err != nil {
		t.Fatal(err)
	}
	// Options after the host are taken, as GNU getopt does; 64 KiB
	// messages ask for every completion (size above 8 KiB).
	if c.Server != "10.77.0.2" || c.Size != 65536 || !c.CPUFreq || !c.Gbits || c.GIDIdx != 0 || c.MTU != 1024 ||
		c.Iters != 5000 || c.TxDepth != 128 || c.CQMod != 1 || c.Port != 18515 || c.NoPeak {
		t.Errorf("write_bw config %+v", c)
	}
	// perftest's adjustments: a size above 8 KiB asks for every
	// completion; the tx depth is at most the iterations.
	if c, _ := parse("ib_write_bw", "-s", "10000", "-n", "50"); c.CQMod != 1 || c.TxDepth != 50 {
		t.Errorf("adjusted %+v", c)
	}
	if c, _ := parse("ib_send_bw", "-n", "101"); c.RxDepth != 102 || !c.NoPeak {
		t.Errorf("send_bw server: rx depth %d (odd depths grow by one), noPeak %v", c.RxDepth, c.NoPeak)
	}
	if c, _ := parse("ib_read_lat"); c.Size != 2 || c.Iters != 1000 || c.TxDepth != 1 || c.CQMod != 1 {
		t.Errorf("read_lat defaults %+v", c)
	}
	if c, _ := parse("ib_write_bw", "-D", "8"); c.Margin != 2 || !c.NoPeak {
		t.Errorf("-D 8: margin %d", c.Margin)
	}
	if c, _ := parse("ib_atomic_bw", "-A", "CMP_AND_SWAP"); c.Size != 8 || c.Atomic != CmpAndSwap {
		t.Errorf("atomic %+v", c)
	}
	// UC and UD post every receive up front (perftest's force_dependecies):
	// the default depth becomes the iterations, up to 16000; a UD test
	// keeps its completion moderation whatever its size.
	for _, c := range []struct {
		args      []string
		rx, cqMod int
	}{
		{[]string{"-c", "UD", "-n", "1000"}, 1000, 100},
		{[]string{"-c", "UC", "-n", "20000", "-s", "64"}, 16000, 100},
		{[]string{"-c", "UD", "-n", "300"}, 300, 100},
		{[]string{"-c", "UD", "-n", "301"}, 302, 100},
		{[]string{"-c", "UC", "-n", "1000", "-r", "64", "-s", "64"}, 64, 100},
		{[]string{"-c", "UC", "-n", "1000", "-s", "65536"}, 1000, 1},
	} {
		got, err := parse("ib_send_bw", c.args...)
		if err != nil || got.RxDepth != c.rx || got.CQMod != c.cqMod {
			t.Errorf("ib_send_bw %q: rx depth %d, cq mod %d, %v; want %d, %d", c.args, got.RxDepth, got.CQMod, err, c.rx, c.cqMod)
		}
	}
	if c, _ := parse("ib_write_bw", "-c", "UC"); c.Conn != verbs.QPTypeUC || c.RxDepth != 1 {
		t.Errorf("write_bw -c UC: %+v", c)
	}
	for _, bad := range []struct {
		tool string
		args []string
		want string
	}{
		{"ib_write_bw", []string{"-n", "4"}, "Iteration num should be between 5"},
		{"ib_write_bw", []string{"-s", "abc"}, "Message Size should be a number"},
		{"ib_write_bw", []string{"-s", "1Q"}, "Message Size should be a number"},
		{"ib_write_bw", []string{"-s", "0"}, "Message Size should be between 1 and"},
		{"ib_write_bw", []string{"-s", "99999999999999999999"}, "Message Size should be between 1 and"},
		{"ib_write_bw", []string{"-s", "9M"}, "Message Size should be between 1 and"},
		{"ib_write_bw", []string{"-m", "1000"}, "Invalid MTU"},
		{"ib_write_bw", []string{"-r", "10"}, "rx depth can be only 1"},
		{"ib_write_bw", []string{"-o", "4"}, "only available on READ"},
		{"ib_write_bw", []string{"-A", "CMP_AND_SWAP"}, "not running the atomic"},
		{"ib_read_bw", []string{"-I", "64"}, "Inline feature not available"},
		{"ib_atomic_bw", []string{"-s", "16"}, "cannot be changed for Atomic"},
		{"ib_atomic_lat", []string{"-a"}, "cannot be changed for Atomic"},
		{"ib_write_bw", []string{"-a", "-D", "5"}, "doesn't support running on all sizes"},
		{"ib_write_bw", []string{"-D", "2", "-f", "1"}, "DURATION > 2*MARGIN"},
		{"ib_write_bw", []string{"-c", "UD"}, " UD connection only possible in SEND verb"},
		{"ib_read_lat", []string{"-c", "UD"}, " UD connection only possible in SEND verb"},
		{"ib_read_bw", []string{"-c", "UC"}, " UC connection not possible in READ/ATOMIC verbs"},
		{"ib_atomic_lat", []string{"-c", "UC"}, " UC connection not possible in READ/ATOMIC verbs"},
		{"ib_send_bw", []string{"-c", "XX"}, " Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}"},
		{"ib_send_bw", []string{"-c", "rc"}, " Invalid Connection type"},
		{"ib_send_bw", []string{"-c", "XRC"}, "goverbs runs RC, UC and UD"},
		{"ib_write_lat", []string{"-q", "1"}, "only available on bw tests"},
		{"ib_write_bw", []string{"-q", "0"}, "num of Qps should be between 1 and 16384"},
		{"ib_write_bw", []string{"-i", "2"}, "one port"},
		{"ib_write_bw", []string{"--addr", "nowhere"}, "invalid device address"},
		{"ib_write_bw", []string{"a", "b"}, "too many arguments"},
		{"ib_write_bw", []string{"--bogus"}, "not defined"},
		{"ib_write_bw", []string{"-A", "SWAP"}, "Invalid Atomic type"},
	} {
		if _, err := parse(bad.tool, bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %q: %v, want %q", bad.tool, bad.args, err, bad.want)
		}
	}
}
