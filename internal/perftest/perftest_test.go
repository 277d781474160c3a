package perftest

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
)

func sampleDest() Dest {
	d := Dest{OutReads: 0x80, QPN: 0x11, PSN: 0xabcdef, RKey: 0x12ab, VAddr: 0x7f1234568000}
	copy(d.GID[:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 2})
	return d
}

func TestKeyMessageLayout(t *testing.T) {
	d := sampleDest()
	b := d.Marshal()
	want := "0000:0080:000011:abcdef:000012ab:00007f1234568000:" +
		"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:02:00000000:\x00"
	if string(b[:]) != want {
		t.Fatalf("key message\n got %q\nwant %q", b, want)
	}
	// The offsets of doc/tools.md §2.4.
	for off, c := range map[int]byte{4: ':', 9: ':', 16: ':', 23: ':', 32: ':', 49: ':', 52: ':', 97: ':', 106: ':', 107: 0} {
		if b[off] != c {
			t.Errorf("byte %d is %q, want %q", off, b[off], c)
		}
	}
	if string(b[50:52]) != "00" || string(b[95:97]) != "02" || string(b[98:106]) != "00000000" {
		t.Error("GID or SRQN not at their offsets")
	}
	back, err := ParseDest(b[:])
	if err != nil || back != d {
		t.Fatalf("parsed %+v, %v", back, err)
	}
	bad := b
	bad[16] = 'x'
	if _, err := ParseDest(bad[:]); !errors.Is(err, ErrKey) {
		t.Errorf("bad separator: %v", err)
	}
	if _, err := ParseDest(b[:100]); !errors.Is(err, ErrKey) {
		t.Errorf("short message: %v", err)
	}
}

// FuzzParseDest feeds the key message parser what a peer might send: it
// never panics, and what it accepts marshals back to a message that parses
// to the same Dest.
func FuzzParseDest(f *testing.F) {
	d := sampleDest()
	b := d.Marshal()
	f.Add(b[:])
	f.Add(b[:100])
	bad := b
	bad[16] = 'x'
	f.Add(bad[:])
	upper := bytes.ToUpper(b[:])
	f.Add(upper)
	f.Add(bytes.Repeat([]byte{':'}, KeySize))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDest(b)
		if err != nil {
			if !errors.Is(err, ErrKey) {
				t.Fatalf("error %v is not ErrKey", err)
			}
			return
		}
		m := d.Marshal()
		if back, err := ParseDest(m[:]); err != nil || back != d {
			t.Fatalf("%q parsed to %+v; its marshalling %q to %+v, %v", b, d, m, back, err)
		}
	})
}

// TestControlChannel runs a client and a server against each other over a
// pipe: prefix, one handshake and the report exchange.
func TestControlChannel(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	client, server := NewConn(a, false), NewConn(b, true)
	cd, sd := sampleDest(), sampleDest()
	sd.QPN, sd.PSN = 0x12, 0x123456
	var wg sync.WaitGroup
	var srvSetup Setup
	var srvGot Dest
	var srvRep Report
	var srvErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if srvSetup, srvErr = server.Prefix(3); srvErr != nil {
			return
		}
		if srvGot, srvErr = server.Handshake(&sd); srvErr != nil {
			return
		}
		srvRep, srvErr = server.ExchangeReport(Report{})
	}()
	setup, err := client.Prefix(5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.Handshake(&cd)
	if err != nil {
		t.Fatal(err)
	}
	sent := Report{Size: 65536, Iters: 5000, BWPeak: 1234.56, BWAvg: 1200, MsgRate: 0.0192}
	if _, err := client.ExchangeReport(sent); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if srvErr != nil {
		t.Fatal(srvErr)
	}
	if setup.MTU != 3 || srvSetup.MTU != 3 || setup.PeerVersion != Version || setup.CycleBuffer != 4096 || setup.CacheLine != 64 {
		t.Errorf("setup %+v / %+v", setup, srvSetup)
	}
	if got != sd || srvGot != cd {
		t.Errorf("handshake swapped %+v / %+v", got, srvGot)
	}
	if srvRep != sent {
		t.Errorf("server received report %+v, want %+v", srvRep, sent)
	}
}

func TestOldPeerRefused(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { // an old server: reads the client's version, answers with its own
		var v [16]byte
		b.Read(make([]byte, 16))
		copy(v[:], "5.60")
		b.Write(v[:])
	}()
	if _, err := NewConn(a, false).Prefix(3); !errors.Is(err, ErrVersion) {
		t.Errorf("peer 5.60: %v", err)
	}
}

func TestBWLines(t *testing.T) {
	var out bytes.Buffer
	WriteBWHeader(&out, false)
	WriteBWLine(&out, Report{Size: 65536, Iters: 5000, BWPeak: 1234.56, BWAvg: 1200, MsgRate: 0.0192}, false)
	want := "---------------------------------------------------------------------------------------\n" +
		" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n" +
		" 65536      5000             1234.56            1200.00\t\t   0.019200\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	// In Gb/s an average below 0.1 switches to six decimals and another
	// layout (REPORT_FMT_EXT).
	WriteBWLine(&out, Report{Size: 2, Iters: 5, BWPeak: 0.05, BWAvg: 0.03, MsgRate: 0.25}, true)
	if got := out.String(); got != " 2          5           0.050000            0.030000            0.250000\n" {
		t.Errorf("gbits line %q", got)
	}
	out.Reset()
	WriteBWLine(&out, Report{Size: 2, Iters: 5, BWPeak: 0.05, BWAvg: 0.03, MsgRate: 0.25}, false)
	if got := out.String(); got != " 2          5                0.05               0.03   \t\t   0.250000\n" {
		t.Errorf("MB/s line %q", got)
	}
}
