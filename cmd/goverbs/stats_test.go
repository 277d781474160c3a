package main

import (
	"bytes"
	"io"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/goverbs/goverbs/internal/clienttest"
	"github.com/goverbs/goverbs/internal/oob"
)

// freeTCPPort returns a TCP port nothing listens on at the moment.
func freeTCPPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// runClient runs a tool's client against a server started just before,
// again while the server does not listen yet, for up to 5 s; stdout and
// stderr hold the last attempt's output.
func runClient(args []string, stdout, stderr *bytes.Buffer) error {
	return clienttest.UntilListening(func() error {
		stdout.Reset()
		stderr.Reset()
		return run(args, stdout, stderr)
	})
}

// statLine is devinfo.Stat's line, as `rdma statistic show link` prints.
var statLine = regexp.MustCompile(`(?m)^link goverbs\d+/1 sent_pkts (\d+) rcvd_pkts (\d+) .*retransmitted_pkts \d+ ud_send_too_long \d+ drop_malformed \d+ .* $`)

// TestStatsOption: every tool prints its device's counters to stderr at
// exit with --stats, in `rdma statistic` form, with the packets it sent
// and received; stdout stays the C tool's. The devices take addresses of
// their own on UDP 4791: the pingpong package's tests, which go test may
// run at the same time, use 127.0.0.1 and 127.0.0.2 (a server here once
// reported 0 packets sent, its peer's answered by theirs).
func TestStatsOption(t *testing.T) {
	for _, tool := range []string{"ibv_rc_pingpong", "ibv_srq_pingpong", "ib_write_bw", "ib_read_lat", "ib_send_lat", "ib_atomic_bw"} {
		port := freeTCPPort(t)
		var srvOut, srvErr, cliErr bytes.Buffer
		done := make(chan error, 1)
		go func() {
			done <- run([]string{tool, "--stats", "-p", port, "-n", "20", "--addr", "127.0.3.1"}, &srvOut, &srvErr)
		}()
		var out bytes.Buffer
		if err := runClient([]string{tool, "--stats", "-p", port, "-n", "20", "--addr", "127.0.3.2", "127.0.3.1"}, &out, &cliErr); err != nil {
			t.Fatalf("%s client: %v", tool, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s server: %v", tool, err)
		}
		for side, s := range map[string]string{"server": srvErr.String(), "client": cliErr.String()} {
			m := statLine.FindStringSubmatch(s)
			if m == nil {
				t.Errorf("%s %s: no counter line in stderr:\n%s", tool, side, s)
				continue
			}
			if m[1] == "0" || m[2] == "0" {
				t.Errorf("%s %s: sent %s, received %s packets", tool, side, m[1], m[2])
			}
		}
		if statLine.MatchString(srvOut.String()) {
			t.Errorf("%s: counters on stdout", tool)
		}
	}
}

// TestMismatchedTools: a client of one tool against a server of another
// ends with an error on both sides, where the C tools wait for ever:
// ib_write_bw's client sends its 16-byte version and waits for the
// server's, and ibv_rc_pingpong's server waits for a longer address
// message, until FirstReply passes; ibv_rc_pingpong's client against
// ib_write_bw's server has its address read as a version, refused.
func TestMismatchedTools(t *testing.T) {
	defer func(d time.Duration) { oob.FirstReply = d }(oob.FirstReply)
	oob.FirstReply = 300 * time.Millisecond
	for _, tc := range []struct{ server, client string }{
		{"ibv_rc_pingpong", "ib_write_bw"},
		{"ib_write_bw", "ibv_rc_pingpong"},
	} {
		port := freeTCPPort(t)
		srv := make(chan error, 1)
		go func() {
			srv <- run([]string{tc.server, "-p", port, "--addr", "127.0.3.3"}, io.Discard, io.Discard)
		}()
		var out, errOut bytes.Buffer
		err := runClient([]string{tc.client, "-p", port, "--addr", "127.0.3.4", "127.0.3.3"}, &out, &errOut)
		if err == nil {
			t.Errorf("%s client against %s server: no error", tc.client, tc.server)
		}
		t.Logf("%s client: %v", tc.client, err)
		select {
		case err := <-srv:
			if err == nil {
				t.Errorf("%s server against %s client: no error", tc.server, tc.client)
			}
			t.Logf("%s server: %v", tc.server, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s server against %s client: still waiting after 10 s", tc.server, tc.client)
		}
	}
}
