package pingpong

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goverbs/goverbs/internal/clienttest"
	"github.com/goverbs/goverbs/verbs"
)

// FuzzParseDest feeds the address message parser what a peer might send:
// it never panics, and what it accepts marshals back to a message that
// parses to the same dest.
func FuzzParseDest(f *testing.F) {
	for _, s := range []string{"0000:000011:abcdef:00000000000000000000ffff0a4d0002\x00",
		"0:11:1:00000000000000000000ffff0a4d0001\x00", "ffffffff:ffffffff:ffffffff:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
		"0000:000011:abcdef:00000000000000000000ffff0a4d00zz", ":::", "\x00:1:2:3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDest(b)
		if err != nil {
			if !errors.Is(err, errBadMessage) {
				t.Fatalf("error %v is not errBadMessage", err)
			}
			return
		}
		m := d.marshal()
		if back, err := parseDest(m); err != nil || back != d {
			t.Fatalf("%q parsed to %+v; its marshalling %q to %+v, %v", b, d, m, back, err)
		}
	})
}

func TestAddressMessage(t *testing.T) {
	// The example of doc/tools.md §1.2.
	d := dest{qpn: 0x11, psn: 0xabcdef, gid: verbs.GIDFromAddr(netip.MustParseAddr("10.77.0.2"))}
	want := "0000:000011:abcdef:00000000000000000000ffff0a4d0002\x00"
	if got := string(d.marshal()); got != want || len(got) != msgSize {
		t.Fatalf("message %q (%d bytes), want %q", got, len(got), want)
	}
	back, err := parseDest([]byte(want))
	if err != nil || back != d {
		t.Fatalf("parsed %+v, %v; want %+v", back, err, d)
	}
	// Numbers are hex of any width, as sscanf %x reads them.
	if d, err := parseDest([]byte("0:11:1:00000000000000000000ffff0a4d0001\x00")); err != nil || d.qpn != 0x11 || d.psn != 1 {
		t.Errorf("short fields: %+v, %v", d, err)
	}
	for _, bad := range []string{"", "0000:000011:abcdef", "0000:zz:abcdef:00000000000000000000ffff0a4d0002",
		"0000:000011:abcdef:00000000000000000000ffff0a4d00", "0000:000011:abcdef:00000000000000000000ffff0a4d00zz"} {
		if _, err := parseDest([]byte(bad)); !errors.Is(err, errBadMessage) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParseArgs(t *testing.T) {
	c, err := ParseArgs("ibv_rc_pingpong", []string{"-g", "1", "-s", "8192", "--mtu", "2048", "-n", "5", "-e", "10.77.0.2"}, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if c.GIDIdx != 1 || c.Size != 8192 || c.MTU != 2048 || c.Iters != 5 || !c.Events || c.Server != "10.77.0.2" || c.Port != 18515 || c.RxDepth != 500 {
		t.Errorf("config %+v", c)
	}
	// Options may follow the host, as getopt_long lets them.
	if c, err := ParseArgs("ibv_rc_pingpong", []string{"10.77.0.2", "--iters=7", "-c"}, new(bytes.Buffer)); err != nil || c.Server != "10.77.0.2" || c.Iters != 7 || !c.Check {
		t.Errorf("options after the host: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-m", "1000"}, {"-p", "70000"}, {"-i", "0"}, {"-s", "0"}, {"a", "b"}, {"--addr", "nonsense"}, {"-z"}} {
		if _, err := ParseArgs("ibv_rc_pingpong", bad, new(bytes.Buffer)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var (
	addrLine  = `^  %s LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID %s$`
	bytesLine = regexp.MustCompile(`^(\d+) bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec$`)
	itersLine = regexp.MustCompile(`^(\d+) iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter$`)
)

// runPair runs both roles in one process over loopback: the server's
// device takes 127.0.0.2, where the client connects, the client's
// 127.0.0.1, both on UDP 4791. With events both sleep on their
// completion channels (-e). It returns what each printed.
func runPair(t *testing.T, size, iters int, events bool) (srv, cli string) {
	t.Helper()
	return runPairWith(t, Config{IBPort: 1, Size: size, MTU: 1024, RxDepth: 16, Iters: iters, GIDIdx: 0, Check: true, Events: events}, Run)
}

// runPairWith is runPair for the tool run with base's options.
func runPairWith(t *testing.T, base Config, Run func(Config, io.Writer) error) (srv, cli string) {
	t.Helper()
	port := freePort(t)
	var srvOut, cliOut bytes.Buffer
	var srvErr error
	var wg sync.WaitGroup
	wg.Add(1)
	base.Port = port
	go func() {
		defer wg.Done()
		srvErr = Run(base, &srvOut)
	}()
	cfg := base
	cfg.Server = "127.0.0.2"
	err := clienttest.UntilListening(func() error { cliOut.Reset(); return Run(cfg, &cliOut) })
	if err != nil { // a server still waiting for its client fails instead
		if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			c.Close()
		}
	}
	wg.Wait()
	if err != nil || srvErr != nil {
		t.Fatalf("client: %v\n%s\nserver: %v\n%s", err, cliOut.String(), srvErr, srvOut.String())
	}
	return srvOut.String(), cliOut.String()
}

func TestServerClient(t *testing.T) {
	for _, events := range []bool{false, true} {
		t.Run(fmt.Sprintf("events=%v", events), func(t *testing.T) { testServerClient(t, events) })
	}
}

func testServerClient(t *testing.T, events bool) {
	srv, cli := runPair(t, 5000, 200, events)
	check := func(name, out, localIP, remoteIP string) {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("%s printed %d lines:\n%s", name, len(lines), out)
		}
		for i, re := range []*regexp.Regexp{
			regexp.MustCompile(strings.ReplaceAll(sprintf(addrLine, "local address: ", "::ffff:"+localIP), ".", `\.`)),
			regexp.MustCompile(strings.ReplaceAll(sprintf(addrLine, "remote address:", "::ffff:"+remoteIP), ".", `\.`)),
			bytesLine, itersLine,
		} {
			if !re.MatchString(lines[i]) {
				t.Errorf("%s line %d: %q does not match %s", name, i+1, lines[i], re)
			}
		}
		if m := bytesLine.FindStringSubmatch(lines[2]); m == nil || m[1] != "2000000" {
			t.Errorf("%s: byte count %v, want 5000*200*2", name, m)
		}
	}
	check("server", srv, "127.0.0.2", "127.0.0.1")
	check("client", cli, "127.0.0.1", "127.0.0.2")
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// TestUnackedPingpongArgs: ibv_uc_pingpong takes ibv_rc_pingpong's
// options; ibv_ud_pingpong has no -m, a default size of 1024, and refuses
// a size beyond the port's MTU before it connects.
func TestUnackedPingpongArgs(t *testing.T) {
	c, err := ParseArgs(UCProg, []string{"-m", "2048", "-s", "9000"}, io.Discard)
	if err != nil || c.Type != verbs.QPTypeUC || c.MTU != 2048 || c.Size != 9000 {
		t.Errorf("uc: %+v, %v", c, err)
	}
	c, err = ParseArgs(UDProg, nil, io.Discard)
	if err != nil || c.Type != verbs.QPTypeUD || c.Size != 1024 {
		t.Errorf("ud defaults: %+v, %v", c, err)
	}
	if _, err := ParseArgs(UDProg, []string{"-m", "1024"}, io.Discard); err == nil {
		t.Error("ibv_ud_pingpong accepted -m")
	}
	for _, host := range []string{"", "127.0.0.1"} {
		c, _ = ParseArgs(UDProg, []string{"-s", "4097", "-p", strconv.Itoa(freePort(t)), host}, io.Discard)
		want := "Requested size larger than port MTU (4096)"
		if err := Run(c, io.Discard); err == nil || err.Error() != want {
			t.Errorf("host %q: %v, want %q", host, err, want)
		}
	}
}
