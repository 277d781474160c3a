package perftest

import (
	"fmt"
	"io"
	"strings"
)

// ResultLine is the rule perftest prints around result tables: 87 dashes.
var ResultLine = strings.Repeat("-", 87)

// WriteBWHeader prints the BW table header of perftest 4.5 (which says
// MB/sec for 2^20 bytes per second; Gb/sec with --report_gbits).
func WriteBWHeader(w io.Writer, gbits bool) {
	unit := "MB/sec"
	if gbits {
		unit = "Gb/sec"
	}
	fmt.Fprintln(w, ResultLine)
	fmt.Fprintf(w, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", unit, unit)
}

// WriteBWLine prints one data line (REPORT_FMT, doc/tools.md §2.8): size
// left-justified in 7, iterations in 10, peak and average with 2
// decimals, two TABs and three spaces (perftest up to 6.26), the message
// rate with 6 decimals. The bandwidths are in the report's unit already;
// in Gb/s an average below 0.1 switches to perftest's 6-decimal layout
// (REPORT_FMT_EXT).
func WriteBWLine(w io.Writer, r Report, gbits bool) {
	writeBWLine(w, r, gbits && r.BWAvg < 0.1)
}

// writeBWSum prints the line of a bidirectional test: this side's size and
// iterations with the sums of both sides' peak, average and message rate
// (print_full_bw_report). perftest picks the layout by this side's
// average alone.
func writeBWSum(w io.Writer, mine, theirs Report, gbits bool) {
	sum := mine
	sum.BWPeak += theirs.BWPeak
	sum.BWAvg += theirs.BWAvg
	sum.MsgRate += theirs.MsgRate
	writeBWLine(w, sum, gbits && mine.BWAvg < 0.1)
}

// writeBWLine prints a BW line in REPORT_FMT, or with ext in
// REPORT_FMT_EXT.
func writeBWLine(w io.Writer, r Report, ext bool) {
	if ext {
		fmt.Fprintf(w, " %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n", r.Size, r.Iters, r.BWPeak, r.BWAvg, r.MsgRate)
		return
	}
	fmt.Fprintf(w, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n", r.Size, r.Iters, r.BWPeak, r.BWAvg, r.MsgRate)
}

// writeLatHeader prints the rule and header of the latency table
// (RESULT_FMT_LAT, or RESULT_FMT_LAT_DUR in a -D run).
func writeLatHeader(w io.Writer, duration bool) {
	fmt.Fprintln(w, ResultLine)
	if duration {
		fmt.Fprintln(w, " #bytes        #iterations       t_avg[usec]    tps average")
		return
	}
	fmt.Fprintln(w, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
}

// WriteLatLine prints one latency line (REPORT_FMT_LAT).
func WriteLatLine(w io.Writer, size, iters int, s LatStats) {
	fmt.Fprintf(w, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		size, iters, s.Min, s.Max, s.Typical, s.Avg, s.Stdev, s.P99, s.P999)
}

// WriteLatDurationLine prints the latency line of a -D run
// (REPORT_FMT_LAT_DUR): average one-way latency and transactions per
// second.
func WriteLatDurationLine(w io.Writer, size, iters int, lat, tps float64) {
	fmt.Fprintf(w, " %-7d       %d            %-7.2f        %-7.2f\n", size, iters, lat, tps)
}
