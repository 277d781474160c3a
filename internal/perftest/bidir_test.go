package perftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBidirOptions: -b (--bidirectional) is for the BW tools; the latency
// tools refuse it with perftest's message. The receiving side of
// ib_send_bw -b sends as well, so it computes the peak as a client does.
func TestBidirOptions(t *testing.T) {
	for _, tool := range []string{"ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat"} {
		for _, opt := range []string{"-b", "--bidirectional"} {
			if _, err := ParseArgs(tool, []string{opt}, new(bytes.Buffer)); err == nil || err.Error() != "Bidirectional is only available in BW test" {
				t.Errorf("%s %s: %v, want perftest's refusal", tool, opt, err)
			}
		}
	}
	for _, tool := range []string{"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"} {
		if c, err := ParseArgs(tool, []string{"--bidirectional"}, new(bytes.Buffer)); err != nil || !c.Duplex {
			t.Errorf("%s --bidirectional: %v, duplex %v", tool, err, c.Duplex)
		}
	}
	if c, _ := ParseArgs("ib_send_bw", []string{"-b", "-n", "100"}, new(bytes.Buffer)); c.NoPeak || c.RxDepth != 100 {
		t.Errorf("ib_send_bw -b server: noPeak %v, rx depth %d", c.NoPeak, c.RxDepth)
	}
	if c, _ := ParseArgs("ib_send_bw", []string{"-n", "100"}, new(bytes.Buffer)); !c.NoPeak {
		t.Error("ib_send_bw server: computes a peak")
	}
}

// firstSends is how many packets a side sent for the first time other
// than acknowledgements: its requests and READ responses.
func firstSends(c map[string]uint64) uint64 {
	return c["sent_pkts"] - c["retransmitted_pkts"] - c["ack_sent"] - c["nak_sent"] - c["send_rnr_err"]
}

// TestBidir runs the four BW tools with -b, one QP and two: both sides
// print one line, the same (the sum of both directions), with the
// iterations of one direction; each side sent all its operations (its
// packet count, and for SEND its completions and the peer's receives),
// and the data of both directions arrived in every QP's region.
func TestBidir(t *testing.T) {
	const n, size, mtu = 60, 3000, 1024
	const pkts = (size + mtu - 1) / mtu
	for _, tool := range []string{"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"} {
		for _, q := range []int{1, 2} {
			args := []string{"-b", "-n", strconv.Itoa(n), "-q", strconv.Itoa(q), "-m", strconv.Itoa(mtu)}
			sz := 8
			if tool != "ib_atomic_bw" {
				args, sz = append(args, "-s", strconv.Itoa(size)), size
			}
			name := fmt.Sprintf("%s -b -q %d", tool, q)
			srv, cli := runPair(t, tool, args...)
			checkBidirHeader(t, name, srv.out, cli.out, Tests[tool].Verb)
			s, c := bwLines(srv.out), bwLines(cli.out)
			if len(s) != 1 || len(c) != 1 || s[0][0] != c[0][0] || s[0][1] != strconv.Itoa(sz) || s[0][2] != strconv.Itoa(q*n) {
				t.Fatalf("%s: BW lines server %q client %q, want one, the same, of %d operations", name, s, c, q*n)
			}
			bw, _ := strconv.ParseFloat(s[0][4], 64)
			rate, _ := strconv.ParseFloat(s[0][5], 64)
			if want := rate * 1e6 * float64(sz) / (1 << 20); rate <= 0 || math.Abs(bw-want) > 0.01*want+0.01 {
				t.Errorf("%s: %.2f MB/s at %.6f Mpps of %d B, want %.2f", name, bw, rate, sz, want)
			}
			for _, x := range []struct {
				side, peer side
				who        string
			}{{srv, cli, "server"}, {cli, srv, "client"}} {
				checkBidirData(t, name+" "+x.who, tool, x.side, x.peer, x.who == "client", q, n, sz)
				ops := uint64(q * n)
				switch tool {
				case "ib_write_bw", "ib_send_bw":
					if got := firstSends(x.side.counters); got != ops*pkts {
						t.Errorf("%s: the %s sent %d request packets, want %d (counters %v)", name, x.who, got, ops*pkts, nonzero(x.side.counters))
					}
				case "ib_read_bw": // its READ requests and the responses to the peer's
					if got := firstSends(x.side.counters); got != ops+ops*pkts {
						t.Errorf("%s: the %s sent %d packets, want %d (counters %v)", name, x.who, got, ops+ops*pkts, nonzero(x.side.counters))
					}
				}
				if tool == "ib_send_bw" && (x.side.counters["rdma_sends"] != ops || x.side.counters["rdma_recvs"] != ops) {
					t.Errorf("%s: the %s completed %d SENDs and %d receives, want %d of each", name, x.who,
						x.side.counters["rdma_sends"], x.side.counters["rdma_recvs"], ops)
				}
			}
		}
	}
}

// checkBidirHeader: the title says Bidirectional and both sides print
// their TX depth, and in ib_send_bw their RX depth.
func checkBidirHeader(t *testing.T, name, srv, cli string, v Verb) {
	t.Helper()
	title := regexp.MustCompile(`(?m)^                    ` + v.String() + ` (\w+ )?Bidirectional BW Test$`)
	for _, out := range []string{srv, cli} {
		if !title.MatchString(out) || !strings.Contains(out, " TX depth        : ") ||
			strings.Contains(out, " RX depth        : ") != (v == Send) {
			t.Errorf("%s: header:\n%s", name, out)
		}
	}
}

// checkBidirData checks that the data the peer sent, wrote, read or added
// is where it belongs on x's side, in each of the q QPs' regions.
func checkBidirData(t *testing.T, name, tool string, x, peer side, client bool, q, n, size int) {
	t.Helper()
	for i := range q {
		var got, want []byte
		switch tool {
		case "ib_write_bw", "ib_send_bw": // the peer's local region i in x's remote region i
			got, want = x.remote(i)[:size], pattern(!client, q*peer.buff)[i*peer.buff:][:size]
		case "ib_read_bw": // the peer's remote region i read into x's local region i
			got, want = x.local(i)[:size], pattern(!client, 2*q*peer.buff)[(q+i)*peer.buff:][:size]
		case "ib_atomic_bw":
			if v := binary.LittleEndian.Uint64(x.remote(i)); v != uint64(n) {
				t.Errorf("%s: QP %d's counter is %d after %d FETCH_AND_ADDs", name, i, v, n)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: QP %d's region does not hold the peer's data", name, i)
		}
	}
}

// TestBidirAllSizes runs -b with -a: each size has its line, the same on
// both sides, and the last, 8 MiB, arrived whole in both directions.
func TestBidirAllSizes(t *testing.T) {
	for _, tool := range []string{"ib_write_bw", "ib_send_bw"} {
		srv, cli := runPair(t, tool, "-b", "-a", "-n", "5")
		s, c := bwLines(srv.out), bwLines(cli.out)
		if len(s) != 23 || len(c) != 23 {
			t.Fatalf("%s -b -a: %d and %d BW lines, want 23", tool, len(s), len(c))
		}
		for i := range s {
			if s[i][0] != c[i][0] || s[i][1] != strconv.Itoa(2<<i) || s[i][2] != "5" {
				t.Errorf("%s -b -a: server %q, client %q", tool, s[i][0], c[i][0])
			}
		}
		checkBidirData(t, tool+" -b -a server", tool, srv, cli, false, 1, 5, 1<<23)
		checkBidirData(t, tool+" -b -a client", tool, cli, srv, true, 1, 5, 1<<23)
	}
}

// TestBidirGbits: with --report_gbits both sides print the sum in Gb/s.
func TestBidirGbits(t *testing.T) {
	srv, cli := runPair(t, "ib_read_bw", "-b", "-n", "100", "--report_gbits")
	s, c := gbitsLines(srv.out), gbitsLines(cli.out)
	if len(s) != 1 || len(c) != 1 || s[0][2] != "100" || !strings.Contains(srv.out, "BW average[Gb/sec]") ||
		!strings.Contains(cli.out, "BW average[Gb/sec]") {
		t.Fatalf("ib_read_bw -b --report_gbits:\n%s\n%s", srv.out, cli.out)
	}
	// Each side picks the layout by its own share, so compare the values.
	for i := 3; i <= 5; i++ {
		a, _ := strconv.ParseFloat(s[0][i], 64)
		b, _ := strconv.ParseFloat(c[0][i], 64)
		if math.Abs(a-b) > 0.005 {
			t.Errorf("field %d: server %s, client %s", i, s[0][i], c[0][i])
		}
	}
}

// TestBidirDuration runs -b with -D 1. ib_write_bw swaps reports: both
// sides print the same sums, each with its own count. ib_send_bw -b -D
// swaps none: each side's count is what both directions completed in its
// window, so it exceeds every SEND it completed in the whole run but for
// the few in flight at the end (tx depth 4).
func TestBidirDuration(t *testing.T) {
	srv, cli := runPair(t, "ib_write_bw", "-b", "-D", "1", "-s", "4096")
	s, c := bwLines(srv.out), bwLines(cli.out)
	if len(s) != 1 || len(c) != 1 || s[0][4] != c[0][4] || s[0][5] != c[0][5] || s[0][3] != "0.00" {
		t.Fatalf("ib_write_bw -b -D 1: lines server %q client %q", s, c)
	}
	srv, cli = runPair(t, "ib_send_bw", "-b", "-D", "1", "-s", "4096", "-t", "4")
	for _, x := range []struct {
		side
		who string
	}{{srv, "server"}, {cli, "client"}} {
		m := bwLines(x.out)
		if len(m) != 1 {
			t.Fatalf("ib_send_bw -b -D 1 %s: BW lines %q", x.who, m)
		}
		iters, _ := strconv.Atoi(m[0][2])
		rate, _ := strconv.ParseFloat(m[0][5], 64)
		if sends := x.counters["rdma_sends"]; uint64(iters) <= sends {
			t.Errorf("ib_send_bw -b -D 1 %s: counted %d, completed %d SENDs: the receives are not counted", x.who, iters, sends)
		}
		if math.Abs(float64(iters)/(rate*1e6)-1) > 0.1 {
			t.Errorf("ib_send_bw -b -D 1 %s: %d at %.6f Mpps: not a one-second window", x.who, iters, rate)
		}
	}
}

// TestBidirEvents: with -e, ib_send_bw -b sleeps on both CQs' channels
// and ib_read_bw -b on its send CQ's, and both move the data both ways.
func TestBidirEvents(t *testing.T) {
	for _, tool := range []string{"ib_send_bw", "ib_read_bw"} {
		srv, cli := runPair(t, tool, "-b", "-e", "-s", "5000", "-n", "200", "-q", "2")
		if s, c := bwLines(srv.out), bwLines(cli.out); len(s) != 1 || len(c) != 1 || s[0][0] != c[0][0] || s[0][2] != "400" {
			t.Errorf("%s -b -e: BW lines %q %q", tool, s, c)
		}
		checkBidirData(t, tool+" -b -e server", tool, srv, cli, false, 2, 200, 5000)
		checkBidirData(t, tool+" -b -e client", tool, cli, srv, true, 2, 200, 5000)
	}
}
