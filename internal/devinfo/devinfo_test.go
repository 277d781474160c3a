package devinfo

import (
	"bytes"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/internal/golden"
	"github.com/goverbs/goverbs/verbs"
)

// device opens a device on a fixed address of an in-memory fabric, so its
// GUID and output are the same on every run, or returns the one the test
// opened already: its name, goverbs0, is one device's at a time.
func device(t *testing.T) *verbs.Device {
	for _, d := range verbs.Devices() {
		if d.Name() == "goverbs0" {
			return d
		}
	}
	net := memconn.NewNetwork(memconn.Options{})
	b, err := net.Listen(netip.MustParseAddrPort("10.77.0.1:4791"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := verbs.OpenDevice(verbs.DeviceConfig{Name: "goverbs0", Bind: b, LinkMTU: 1500})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDevInfo(t *testing.T) {
	var out bytes.Buffer
	if err := DevInfo(&out, device(t), 0, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "ibv_devinfo.golden", out.Bytes())
	if err := DevInfo(&out, device(t), 2, false); err == nil {
		t.Error("port 2 accepted")
	}
}

func TestDevInfoVerbose(t *testing.T) {
	var out bytes.Buffer
	if err := DevInfo(&out, device(t), 1, true); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "ibv_devinfo-v.golden", out.Bytes())
}

// label is a line of ibv_devinfo output without its value: the text up to
// the last TAB, or the whole line when it has no value (a flag name).
func label(line string) string {
	if i := strings.LastIndexByte(line, '\t'); i >= 0 && strings.TrimSpace(line[:i]) != "" {
		return line[:i+1]
	}
	return line
}

// TestLayoutMatchesRxe compares our output with what rdma-core 44's tools
// printed for Linux 6.1 rxe in the interop lab (testdata/rxe): every line
// of ours has the label and the TABs of a line of theirs, in the same
// order. Plain ibv_devinfo matches line for line; -v may leave out lines
// for what goverbs lacks (capability flags, more GIDs).
func TestLayoutMatchesRxe(t *testing.T) {
	for _, c := range []struct {
		file          string
		verbose, same bool
	}{{"ibv_devinfo.txt", false, true}, {"ibv_devinfo-v.txt", true, false}} {
		want, err := os.ReadFile("testdata/rxe/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := DevInfo(&out, device(t), 0, c.verbose); err != nil {
			t.Fatal(err)
		}
		theirs := strings.Split(string(want), "\n")
		ours := strings.Split(out.String(), "\n")
		if c.same && len(ours) != len(theirs) {
			t.Errorf("%s: %d lines, rxe %d", c.file, len(ours), len(theirs))
		}
		j := 0
		for _, line := range ours {
			for j < len(theirs) && label(theirs[j]) != label(line) && !(strings.HasPrefix(line, "\t\t\t\t\t") && strings.HasPrefix(theirs[j], "\t\t\t\t\t")) {
				if c.same {
					t.Errorf("%s: rxe line %q, ours %q", c.file, theirs[j], line)
				}
				j++
			}
			if j == len(theirs) {
				t.Fatalf("%s: line %q is not in rxe's output (or out of order)", c.file, line)
			}
			j++
		}
	}
	// ibv_devices and rdma statistic: the same shape.
	for _, c := range []struct {
		file string
		re   *regexp.Regexp
		out  func(*bytes.Buffer)
	}{
		{"ibv_devices.txt", regexp.MustCompile(`^    device          \t   node GUID\n    ------          \t----------------\n    \S+ +\t[0-9a-f]{16}\n$`),
			func(b *bytes.Buffer) { Devices(b, []*verbs.Device{device(t)}) }},
		{"rdma-statistic.txt", regexp.MustCompile(`^link \w+/1 ([a-z_]+ \d+ )+\n$`),
			func(b *bytes.Buffer) { Stat(b, device(t)) }},
	} {
		want, err := os.ReadFile("testdata/rxe/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		c.out(&out)
		if !c.re.Match(want) || !c.re.Match(out.Bytes()) {
			t.Errorf("%s: rxe %q\nours %q\ndo not both match %s", c.file, want, out.String(), c.re)
		}
	}
}

func TestDevices(t *testing.T) {
	var out bytes.Buffer
	Devices(&out, []*verbs.Device{device(t)})
	golden.Check(t, "ibv_devices.golden", out.Bytes())
}

func TestStat(t *testing.T) {
	var out bytes.Buffer
	Stat(&out, device(t))
	golden.Check(t, "stat.golden", out.Bytes())
	if !strings.HasPrefix(out.String(), "link goverbs0/1 sent_pkts 0 rcvd_pkts 0 duplicate_request 0 ") {
		t.Errorf("not in rdma statistic's shape: %q", out.String())
	}
}
