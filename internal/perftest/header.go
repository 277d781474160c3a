package perftest

import (
	"fmt"
	"io"
	"strings"
)

// printBanner is what a server prints before it waits for the client.
func printBanner(w io.Writer) {
	fmt.Fprint(w, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
}

// testInfo is what the block describing the test shows of the device and
// the connection.
type testInfo struct {
	dev      string
	mtu      int // bytes
	gidIx    int
	outReads int
}

// printTestInfo prints perftest's block describing the test
// (ctx_print_test_info) as perftest 4.5 prints it for rxe: RoCE, one
// port, no SRQ, relaxed ordering on, the legacy post-send API.
func printTestInfo(w io.Writer, cfg *Config, s testInfo) {
	t := cfg.Test
	title := t.Verb.String() + " "
	if t.Verb == Atomic {
		title += cfg.Atomic.String() + " "
	}
	switch {
	case t.Lat:
		title += "Latency "
	case cfg.Duplex:
		title += "Bidirectional BW "
	default:
		title += "BW "
	}
	fmt.Fprintln(w, ResultLine)
	fmt.Fprintf(w, "                    %sTest\n", title)
	if cfg.Events {
		// perftest names the completion vector its CQs use (-X; 0).
		fmt.Fprintf(w, " Test with events. Using %s_comp0\n", s.dev)
	}
	fmt.Fprintf(w, " Dual-port       : OFF\t\tDevice         : %s\n", s.dev)
	fmt.Fprintf(w, " Number of qps   : %d\t\tTransport type : IB\n", cfg.QPs)
	fmt.Fprintf(w, " Connection type : %v\t\tUsing SRQ      : OFF\n", cfg.Conn)
	// ib_write_lat turns relaxed ordering off: it polls the last byte of
	// each message, which must not land before the rest.
	relaxed := "ON"
	if t.Verb == Write && t.Lat {
		relaxed = "OFF"
	}
	fmt.Fprintf(w, " PCIe relax order: %s\n", relaxed)
	fmt.Fprintf(w, " ibv_wr* API     : OFF\n")
	// Both sides of a bidirectional test send and, in ib_send_bw, receive.
	if cfg.client() || cfg.Duplex {
		fmt.Fprintf(w, " TX depth        : %d\n", cfg.TxDepth)
	}
	if t.Verb == Send && (!cfg.client() || cfg.Duplex) {
		fmt.Fprintf(w, " RX depth        : %d\n", cfg.RxDepth)
	}
	if !t.Lat {
		fmt.Fprintf(w, " CQ Moderation   : %d\n", cfg.CQMod)
	}
	fmt.Fprintf(w, " Mtu             : %d[B]\n", s.mtu)
	fmt.Fprintf(w, " Link type       : Ethernet\n")
	fmt.Fprintf(w, " GID index       : %d\n", s.gidIx)
	if t.Verb.readLike() {
		fmt.Fprintf(w, " Outstand reads  : %d\n", s.outReads)
	} else {
		fmt.Fprintf(w, " Max inline data : %d[B]\n", cfg.Inline)
	}
	fmt.Fprintf(w, " rdma_cm QPs\t : OFF\n")
	fmt.Fprintf(w, " Data ex. method : Ethernet\n")
	fmt.Fprintln(w, ResultLine)
}

// printDest prints one side's connection line and its GID line
// (ctx_print_pingpong_data): READ tests add OUT, READ and WRITE tests the
// RKey and VAddr; the GID bytes are printed in decimal.
func printDest(w io.Writer, side string, d *Dest, v Verb) {
	fmt.Fprintf(w, " %s address: LID %s QPN %s PSN %s", side, altHex(uint64(d.LID), 4), altHex(uint64(d.QPN), 6), altHex(uint64(d.PSN), 6))
	if v == Read {
		fmt.Fprintf(w, " OUT %s", altHex(uint64(d.OutReads), 4))
	}
	if v.rdma() {
		fmt.Fprintf(w, " RKey %s VAddr %s", altHex(uint64(d.RKey), 8), altHex(d.VAddr, 16))
	}
	gid := make([]string, 16)
	for i, b := range d.GID {
		gid[i] = fmt.Sprintf("%02d", b)
	}
	fmt.Fprintf(w, "\n GID: %s\n", strings.Join(gid, ":"))
}

// altHex formats like C's "%#0*x": a 0x prefix (none for zero) and zero
// padding to width characters including the prefix.
func altHex(v uint64, width int) string {
	if v == 0 {
		return fmt.Sprintf("%0*x", width, v)
	}
	return "0x" + fmt.Sprintf("%0*x", width-2, v)
}
