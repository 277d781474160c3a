package pingpong

import (
	"bytes"
	"net"
	"regexp"
	"strings"
	"testing"
)

func TestSRQParseArgs(t *testing.T) {
	c, err := ParseArgs(SRQProg, []string{"-g", "1", "-n", "200", "10.77.0.2"}, new(bytes.Buffer))
	if err != nil || c.NumQP != 16 || c.RxDepth != 500 || c.Iters != 200 || c.Server != "10.77.0.2" {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	if c, err := ParseArgs(SRQProg, []string{"--num-qp=4", "-r", "4"}, new(bytes.Buffer)); err != nil || c.NumQP != 4 {
		t.Errorf("-q 4 -r 4: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-q", "0"}, {"-q", "257", "-r", "1000"}, {"-q", "8", "-r", "7"}} {
		if _, err := ParseArgs(SRQProg, bad, new(bytes.Buffer)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseArgs("ibv_rc_pingpong", []string{"-q", "4"}, new(bytes.Buffer)); err == nil {
		t.Error("ibv_rc_pingpong accepted -q")
	}
}

// TestSRQExchange: the addresses go as srq_pingpong sends them, all 256
// of them, the unused ones zeros.
func TestSRQExchange(t *testing.T) {
	a, b := net.Pipe()
	my := make([]dest, maxSRQQPs)
	my[0] = dest{qpn: 0x11, psn: 0xabcdef}
	go func() {
		writeDests(a, my)
		a.Close()
	}()
	var all bytes.Buffer
	if _, err := all.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	want := "0000:000011:abcdef:00000000000000000000000000000000\x00" +
		strings.Repeat("0000:000000:000000:00000000000000000000000000000000\x00", maxSRQQPs-1)
	if all.String() != want {
		t.Fatalf("exchange of %d bytes differs from srq_pingpong's %d", all.Len(), len(want))
	}
	c, d := net.Pipe()
	go func() {
		c.Write([]byte(want))
		c.Close()
	}()
	got, err := readDests(d)
	if err != nil || got[0] != my[0] || got[1] != (dest{}) || len(got) != maxSRQQPs {
		t.Errorf("read back %+v…, %v", got[:2], err)
	}
}

// TestSRQServerClient: both roles over loopback with four QPs on each
// side's SRQ print an address line per QP and the same results.
func TestSRQServerClient(t *testing.T) {
	const nqp = 4
	srv, cli := runPairWith(t, Config{IBPort: 1, Size: 3000, MTU: 1024, RxDepth: 8, Iters: 200, GIDIdx: 0, NumQP: nqp}, RunSRQ)
	check := func(name, out, localIP, remoteIP string) {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 2*nqp+2 {
			t.Fatalf("%s printed %d lines:\n%s", name, len(lines), out)
		}
		local := regexp.MustCompile(strings.ReplaceAll(sprintf(addrLine, "local address: ", "::ffff:"+localIP), ".", `\.`))
		remote := regexp.MustCompile(strings.ReplaceAll(sprintf(addrLine, "remote address:", "::ffff:"+remoteIP), ".", `\.`))
		for i := range nqp {
			if !local.MatchString(lines[i]) || !remote.MatchString(lines[nqp+i]) {
				t.Errorf("%s: address lines\n%s", name, strings.Join(lines[:2*nqp], "\n"))
			}
		}
		if m := bytesLine.FindStringSubmatch(lines[2*nqp]); m == nil || m[1] != "1200000" {
			t.Errorf("%s: %q, want 3000*200*2 bytes", name, lines[2*nqp])
		}
		if m := itersLine.FindStringSubmatch(lines[2*nqp+1]); m == nil || m[1] != "200" {
			t.Errorf("%s: %q, want 200 iters", name, lines[2*nqp+1])
		}
	}
	check("server", srv, "127.0.0.2", "127.0.0.1")
	check("client", cli, "127.0.0.1", "127.0.0.2")
}
