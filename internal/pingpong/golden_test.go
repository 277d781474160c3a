package pingpong

import (
	"bytes"
	"io"
	"math"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"
)

var (
	cAddrLine   = regexp.MustCompile(`^(  local address: |  remote address:) LID 0x([0-9a-f]{4}), QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6}), GID (\S+)$`)
	cUDLocal    = regexp.MustCompile(`^  local address:  LID 0x([0-9a-f]{4}), QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6}): GID (\S+)$`)
	cResultLine = regexp.MustCompile(`^(\d+) bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec\n(\d+) iters in [0-9.]+ seconds = ([0-9.]+) usec/iter$`)
)

// shape reduces an ibv_rc_pingpong output to its layout: each address
// line and the pair of result lines are parsed and printed again with our
// formatters, which must give them back byte for byte, and are then
// masked, as their values differ between runs.
func shape(t *testing.T, name, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var got []string
	for i := 0; i < len(lines); i++ {
		var b bytes.Buffer
		orig := lines[i]
		switch {
		case cUDLocal.MatchString(orig):
			m := cUDLocal.FindStringSubmatch(orig)
			printLocal(&b, parseAddrLine(t, name, m[1:]), verbs.QPTypeUD)
			lines[i] = "<local address line>"
		case cAddrLine.MatchString(orig):
			m := cAddrLine.FindStringSubmatch(orig)
			printDest(&b, m[1], parseAddrLine(t, name, m[2:]))
			lines[i] = "<" + strings.TrimSpace(m[1]) + " line>"
		case i+1 < len(lines) && cResultLine.MatchString(orig+"\n"+lines[i+1]):
			orig += "\n" + lines[i+1]
			m := cResultLine.FindStringSubmatch(orig)
			bytesMoved, _ := strconv.ParseInt(m[1], 10, 64)
			iters, _ := strconv.Atoi(m[2])
			perIter, _ := strconv.ParseFloat(m[3], 64)
			// The run time is known to within iters/200 µs from the
			// rounded time per iteration: one of those prints the lines.
			guess := int64(math.Round(perIter * float64(iters)))
			for usec := guess - int64(iters)/200 - 1; usec <= guess+int64(iters)/200+1; usec++ {
				b.Reset()
				if printResult(&b, bytesMoved, iters, usec); b.String() == orig+"\n" {
					break
				}
			}
			lines[i] = "<result lines>"
			lines = append(lines[:i+1], lines[i+2:]...)
		}
		if b.Len() > 0 && b.String() != orig+"\n" {
			t.Errorf("%s: %q printed again as %q", name, orig, b.String())
		}
		got = append(got, lines[i])
	}
	return got
}

// parseAddrLine reads the LID, QPN, PSN and GID fields of an address line.
func parseAddrLine(t *testing.T, name string, f []string) *dest {
	t.Helper()
	lid, _ := strconv.ParseUint(f[0], 16, 16)
	qpn, _ := strconv.ParseUint(f[1], 16, 32)
	psn, _ := strconv.ParseUint(f[2], 16, 32)
	ip, err := netip.ParseAddr(f[3])
	if err != nil {
		t.Fatalf("%s: GID %q: %v", name, f[3], err)
	}
	return &dest{lid: uint16(lid), qpn: uint32(qpn), psn: uint32(psn), gid: verbs.GIDFromAddr(ip)}
}

// TestOutputMatchesPingpongs runs both roles of each tool with the options
// of a lab run and compares the output with what rdma-core's tool printed
// there on rxe (testdata/rxe): the same lines in the same order, and the
// C tool's own lines reprinted byte for byte by our formatters.
func TestOutputMatchesPingpongs(t *testing.T) {
	for _, tool := range []struct {
		prog string
		size int
	}{{"ibv_rc_pingpong", 4096}, {UCProg, 4096}, {UDProg, 1024}} {
		t.Run(tool.prog, func(t *testing.T) {
			cfg, err := ParseArgs(tool.prog, []string{"-g", "0", "-n", "200", "-r", "16", "-c"}, io.Discard)
			if err != nil || cfg.Size != tool.size {
				t.Fatalf("%+v, %v", cfg, err)
			}
			srv, cli := runPairWith(t, cfg, Run)
			for role, out := range map[string]string{"server": srv, "client": cli} {
				name := tool.prog + "." + role + ".txt"
				want, err := os.ReadFile("testdata/rxe/" + name)
				if err != nil {
					t.Fatal(err)
				}
				theirs, ours := shape(t, name, string(want)), shape(t, "ours: "+name, out)
				if strings.Join(theirs, "\n") != strings.Join(ours, "\n") {
					t.Errorf("%s differs from rdma-core's:\n%s\n--- %s:\n%s", name, strings.Join(ours, "\n"), tool.prog, strings.Join(theirs, "\n"))
				}
			}
		})
	}
}
