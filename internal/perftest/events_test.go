package perftest

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"testing"
)

// TestEvents: with -e every tool but the WRITE ones (which perftest
// refuses) sleeps on its completion channels and moves the same data,
// with the same lines, as when it polls; a -D run ends on time while
// asleep.
func TestEvents(t *testing.T) {
	for _, tool := range []string{"ib_write_bw", "ib_write_lat"} {
		if _, err := ParseArgs(tool, []string{"-e"}, new(bytes.Buffer)); err == nil || err.Error() != "Events feature not available on WRITE verb" {
			t.Errorf("%s -e: %v, want perftest's refusal", tool, err)
		}
	}
	srv, cli := runPair(t, "ib_send_bw", "-e", "-s", "5000", "-n", "300")
	for _, out := range []string{srv.out, cli.out} {
		if !regexp.MustCompile(`\n                    Send BW Test\n Test with events\. Using goverbs\d+_comp0\n Dual-port  `).MatchString(out) {
			t.Errorf("ib_send_bw -e: no events line under the title:\n%s", out)
		}
	}
	if c, s := bwLines(cli.out), bwLines(srv.out); len(c) != 1 || len(s) != 1 || c[0][2] != "300" || s[0][2] != "300" {
		t.Errorf("ib_send_bw -e: BW lines %q %q", c, s)
	}
	if !bytes.Equal(srv.remote(0)[:5000], pattern(true, 5000)) {
		t.Error("ib_send_bw -e: the server's buffer does not hold the client's data")
	}
	srv, cli = runPair(t, "ib_read_bw", "-e", "-s", "9000", "-n", "100", "-q", "2")
	if c := bwLines(cli.out); len(c) != 1 || c[0][2] != "200" {
		t.Errorf("ib_read_bw -e -q 2: BW line %q", c)
	}
	for i := range 2 {
		if !bytes.Equal(cli.local(i)[:9000], pattern(false, 2*2*srv.buff)[(2+i)*srv.buff:(2+i)*srv.buff+9000]) {
			t.Errorf("ib_read_bw -e: QP %d read the wrong data", i)
		}
	}
	srv, cli = runPair(t, "ib_atomic_bw", "-e", "-n", "250")
	if got := binary.LittleEndian.Uint64(srv.remote(0)); got != 250 {
		t.Errorf("ib_atomic_bw -e: counter %d after 250 FETCH_AND_ADDs", got)
	}
	srv, cli = runPair(t, "ib_send_lat", "-e", "-s", "5000", "-n", "200")
	checkLat(t, "ib_send_lat -e client", cli.out, []int{5000}, 200)
	checkLat(t, "ib_send_lat -e server", srv.out, []int{5000}, 200)
	if !bytes.Equal(srv.remote(0)[:5000], pattern(true, 5000)) || !bytes.Equal(cli.remote(0)[:5000], pattern(false, 5000)) {
		t.Error("ib_send_lat -e: a receive half does not hold the peer's data")
	}
	_, cli = runPair(t, "ib_read_lat", "-e", "-n", "100")
	checkLat(t, "ib_read_lat -e client", cli.out, []int{2}, 100)
	srv, cli = runPair(t, "ib_send_bw", "-e", "-D", "1", "-s", "4096")
	if c, s := bwLines(cli.out), bwLines(srv.out); len(c) != 1 || len(s) != 1 {
		t.Errorf("ib_send_bw -e -D 1: BW lines %q %q", c, s)
	}
}
