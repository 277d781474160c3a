package perftest

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestUDSendBW: over UD the server's receive buffers start with the
// packet's network header, 40 bytes, then the client's data, a cache
// line into the region (perftest's layout).
func TestUDSendBW(t *testing.T) {
	srv, cli := runPair(t, "ib_send_bw", "-c", "UD", "-s", "1000", "-n", "300")
	c, s := bwLines(cli.out), bwLines(srv.out)
	if len(c) != 1 || len(s) != 1 || c[0][1] != "1000" || c[0][2] != "300" || s[0][2] != "300" {
		t.Fatalf("BW lines: client %q server %q", c, s)
	}
	r := srv.remote(0)
	if !bytes.Equal(r[CacheLine:CacheLine+1000], pattern(true, 1000)) {
		t.Error("the server's buffer does not hold the client's data after the GRH")
	}
	grh := r[CacheLine-grhSize : CacheLine]
	if !bytes.Equal(grh[:20], make([]byte, 20)) || grh[20] != 0x45 ||
		netip.AddrFrom4([4]byte(grh[32:36])) != netip.MustParseAddr("127.0.1.1") ||
		netip.AddrFrom4([4]byte(grh[36:40])) != netip.MustParseAddr("127.0.1.2") {
		t.Errorf("GRH % x", grh)
	}
	for _, out := range []string{cli.out, srv.out} {
		if !strings.Contains(out, " Connection type : UD\t\tUsing SRQ      : OFF\n") {
			t.Errorf("connection type:\n%s", out)
		}
	}
	if !strings.Contains(srv.out, " RX depth        : 300\n") {
		t.Errorf("a UD server posts a receive per iteration:\n%s", srv.out)
	}
}

// TestUDSizes: without -s a UD test runs at one packet of the MTU; with
// -a its sizes end there; an -s beyond it fails on both sides.
func TestUDSizes(t *testing.T) {
	_, cli := runPair(t, "ib_send_bw", "-c", "UD", "-n", "20", "-m", "2048")
	if c := bwLines(cli.out); len(c) != 1 || c[0][1] != "2048" {
		t.Errorf("default size: %q", c)
	}
	_, cli = runPair(t, "ib_send_bw", "-c", "UD", "-n", "20", "-a")
	if c := bwLines(cli.out); len(c) != 12 || c[11][1] != "4096" {
		t.Errorf("-a: %d lines, last %q", len(c), c[len(c)-1])
	}
	_, _, srvErr, err := runSides(t, "ib_send_lat", []string{"-c", "UD", "-s", "4097"}, []string{"-c", "UD", "-s", "4097"})
	for _, e := range []error{srvErr, err} {
		if !errors.Is(e, errUDSize) {
			t.Errorf("-s 4097: %v", e)
		}
	}
}

// TestFitUD: perftest's notes when it brings a UD size to the MTU.
func TestFitUD(t *testing.T) {
	var b bytes.Buffer
	cfg, _ := ParseArgs("ib_send_bw", []string{"-c", "UD"}, &b)
	if err := fitUD(&cfg, 1024, cfg.Stderr); err != nil || cfg.Size != 1024 ||
		b.String() != " Max msg size in UD is MTU 1024\n Changing to this MTU\n" {
		t.Errorf("size %d, %v, stderr %q", cfg.Size, err, b.String())
	}
	cfg, _ = ParseArgs("ib_send_bw", []string{"-c", "UC"}, &b)
	if err := fitUD(&cfg, 1024, cfg.Stderr); err != nil || cfg.Size != 65536 {
		t.Errorf("UC: size %d, %v", cfg.Size, err)
	}
}

// TestUDSendLat runs the SEND ping-pong over UD.
func TestUDSendLat(t *testing.T) {
	srv, cli := runPair(t, "ib_send_lat", "-c", "UD", "-s", "100", "-n", "200")
	checkLat(t, "client", cli.out, []int{100}, 200)
	checkLat(t, "server", srv.out, []int{100}, 200)
}

// TestUCTools runs the UC tests perftest allows, checking the data where
// it lands.
func TestUCTools(t *testing.T) {
	srv, cli := runPair(t, "ib_write_bw", "-c", "UC", "-s", "5000", "-n", "300")
	if c, s := bwLines(cli.out), bwLines(srv.out); len(c) != 1 || len(s) != 1 || c[0][0] != s[0][0] {
		t.Errorf("write BW lines: client %q server %q", c, s)
	}
	// Nothing makes the UC client wait for its data to land, and a
	// server does not wait for it either: it closes its device once the
	// reports are swapped, so on a busy machine its receive loop may not
	// have taken the datagrams from the socket yet (seen: 0 of 600). The
	// WRITEs all write the same bytes, so one that landed is enough; the
	// data is checked when the server took every packet in.
	switch got, sent := srv.counters["rcvd_pkts"], cli.counters["sent_pkts"]; {
	case got == sent && !bytes.Equal(srv.remote(0)[:5000], pattern(true, 5000)):
		t.Errorf("write: the server took in all %d packets, and its buffer does not hold the client's data", sent)
	case got != sent:
		t.Logf("write: the server took in %d of %d packets before it closed; data not checked", got, sent)
	}
	srv, cli = runPair(t, "ib_send_bw", "-c", "UC", "-s", "5000", "-n", "300")
	if c, s := bwLines(cli.out), bwLines(srv.out); len(c) != 1 || len(s) != 1 || s[0][2] != "300" {
		t.Errorf("send BW lines: client %q server %q", c, s)
	}
	if !bytes.Equal(srv.remote(0)[:5000], pattern(true, 5000)) || !strings.Contains(srv.out, " Connection type : UC") {
		t.Error("send: the server's buffer does not hold the client's data")
	}
	srv, cli = runPair(t, "ib_write_lat", "-c", "UC", "-s", "64", "-n", "200")
	checkLat(t, "write_lat client", cli.out, []int{64}, 200)
	checkLat(t, "write_lat server", srv.out, []int{64}, 200)
	srv, cli = runPair(t, "ib_send_lat", "-c", "UC", "-s", "5000", "-n", "200")
	checkLat(t, "send_lat client", cli.out, []int{5000}, 200)
	checkLat(t, "send_lat server", srv.out, []int{5000}, 200)
}

// TestStallCheck: a UC or UD receiver that gets nothing for a period of
// the check gives up with perftest's message; one that gets messages
// does not.
func TestStallCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, _ := ParseArgs("ib_send_bw", []string{"-c", "UD"}, new(bytes.Buffer))
		c := watchStall(context.Background(), &cfg, 1000)
		defer c.stop()
		for i := range 5 {
			c.count(i + 1) // progress every half period keeps it alive
			time.Sleep(stallPeriod / 2)
			if c.err() != nil {
				t.Fatalf("gave up after %v while messages arrived", time.Duration(i+1)*stallPeriod/2)
			}
		}
		start := time.Now()
		<-c.context(context.Background()).Done()
		if d := time.Since(start); d > 2*stallPeriod {
			t.Errorf("gave up %v after the last message", d)
		}
		want := " Did not get Message for 120 Seconds, exiting..\n Total Received=5, Total Iters Required=1000"
		if err := c.err(); err == nil || err.Error() != want {
			t.Errorf("%v, want %q", err, want)
		}
	})
	rc, _ := ParseArgs("ib_send_bw", nil, new(bytes.Buffer))
	if watchStall(context.Background(), &rc, 1) != nil {
		t.Error("RC loses nothing and needs no check")
	}
}
