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

// WriteBWLine prints one data line (CONNECT.md §2.8): size left-justified
// in 7, iterations in 10, peak and average with 2 decimals, two TABs and
// three spaces (perftest up to 6.26), the message rate with 6 decimals.
// With gbits the bandwidths are 10^9 bits per second, all three numbers
// with 6 decimals when the average is below 0.1.
func WriteBWLine(w io.Writer, r Report, gbits bool) {
	peak, avg, prec := r.BWPeak, r.BWAvg, 2
	if gbits {
		const mbToGbit = 1 << 20 * 8 / 1e9
		peak, avg = peak*mbToGbit, avg*mbToGbit
		if avg < 0.1 {
			prec = 6
		}
	}
	fmt.Fprintf(w, " %-7d    %-10d       %-7.*f            %-7.*f\t\t   %-7.6f\n", r.Size, r.Iters, prec, peak, prec, avg, r.MsgRate)
}
