package main

import (
	"github.com/goverbs/goverbs/internal/golden"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"

	"bytes"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/wire"
)

func TestCodecDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"codec"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "codec.golden", out.Bytes())
	// The demo's packets are the reference vectors of doc/protocol.md §4.4.
	for _, want := range []string{"7d 8e d0 d8", "2d 8e 58 b6", "ICRC BAD"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestDecode(t *testing.T) {
	e := wire.Envelope{Src: netip.MustParseAddr("10.77.0.2"), Dst: netip.MustParseAddr("10.77.0.1"),
		IPID: 0x4d2, FlagsFragment: wire.FlagDontFragment, SrcPort: 0xc001, DstPort: wire.UDPPort}
	path := filepath.Join(t.TempDir(), "x.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, op := range []wire.Opcode{wire.RCWriteFirst, wire.RCAcknowledge, wire.RCReadResponseLast} {
		n := 0
		if op.Info().Is(wire.OpPayload) {
			n = 8
		}
		p, err := wire.NewPacket(make([]byte, 128), 0, &wire.BTHFields{Opcode: op, PKey: 0xffff, DestQP: 0x11, PSN: wire.PSN(100 + i)}, n)
		if err != nil {
			t.Fatal(err)
		}
		if h := p.RETH(); h != nil {
			h.Encode(&wire.RETHFields{VA: 0x1000, RKey: 0x42, DMALength: 2048})
		}
		if h := p.AETH(); h != nil {
			h.Encode(&wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: 3})
		}
		p.SealICRC(&e)
		if i == 2 {
			p.Payload()[0] = 1 // corrupted after sealing
		}
		if err := w.WriteFrame(&capture.Frame{Time: t0.Add(time.Duration(i) * 1500 * time.Microsecond), Envelope: e, Packet: p}); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	var out bytes.Buffer
	if err := run([]string{"decode", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "decode.golden", out.Bytes())
	// The same frames saved as pcapng, Wireshark's format, decode the same.
	ng := filepath.Join(t.TempDir(), "x.pcapng")
	toPcapng(t, path, ng)
	var ngOut bytes.Buffer
	if err := run([]string{"decode", ng}, &ngOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	if ngOut.String() != out.String() {
		t.Errorf("the pcapng file decodes as\n%s\nthe pcap file as\n%s", ngOut.String(), out.String())
	}
}

// toPcapng copies the pcap file from into a pcapng file to.
func toPcapng(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := pcapgo.NewNgWriter(out, r.LinkType())
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"decode"}, {"decode", "-x", "f"}, {"demo", "x"}, {"demo", "-s", "4"}, {"demo", "-s", "67108865"}, {"demo", "-n", "0"}, {"ibv_rc_pingpong", "-m", "100"}, {"ibv_rc_pingpong", "-n", "0"}} {
		var out bytes.Buffer
		if err := run(args, &out, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
	}
	// A flag the flag package refused it printed with the usage, which
	// main then does not print again; what the command refuses itself, it
	// does. -h is no error.
	for _, c := range []struct {
		args  []string
		shown bool
	}{{[]string{"demo", "-s", "abc"}, true}, {[]string{"decode", "-x"}, true}, {[]string{"codec", "-x"}, true},
		{[]string{"ib_write_bw", "-s", "abc"}, true}, {[]string{"ibv_rc_pingpong", "--bogus"}, true},
		{[]string{"demo", "x"}, false}, {[]string{"decode"}, false}, {[]string{"ib_write_bw", "-c", "XYZ"}, false}} {
		var shown *toolflag.ShownError
		if err := run(c.args, io.Discard, io.Discard); !errors.Is(err, errUsage) || errors.As(err, &shown) != c.shown {
			t.Errorf("%q: err = %v, want a usage error, printed by the flag package: %v", c.args, err, c.shown)
		}
	}
	for _, args := range [][]string{{"codec", "-h"}, {"decode", "-h"}, {"demo", "-h"}, {"ib_write_bw", "-h"}, {"ibv_devinfo", "-h"}} {
		var usage bytes.Buffer
		if err := run(args, io.Discard, &usage); err != nil || usage.Len() == 0 {
			t.Errorf("%q: %v, %d bytes of usage", args, err, usage.Len())
		}
	}
	var out bytes.Buffer
	if err := run([]string{"decode", filepath.Join(t.TempDir(), "missing.pcap")}, &out, io.Discard); err == nil || errors.Is(err, errUsage) {
		t.Errorf("missing file: %v", err)
	}
	if err := run([]string{"decode", "main_test.go"}, &out, io.Discard); err == nil || !strings.Contains(err.Error(), "not a pcap or pcapng file") {
		t.Errorf("decoding a Go file: %v", err)
	}
	if err := run([]string{"help"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "decode [-all-ports] FILE") {
		t.Errorf("help: %v %q", err, out.String())
	}
	// help COMMAND is COMMAND -h; help of what is no command is an error.
	for _, cmd := range []string{"ib_write_lat", "demo", "ibv_devinfo"} {
		var help, direct bytes.Buffer
		errHelp := run([]string{"help", cmd}, io.Discard, &help)
		errDirect := run([]string{cmd, "-h"}, io.Discard, &direct)
		if errHelp != nil || errDirect != nil || help.Len() == 0 || help.String() != direct.String() {
			t.Errorf("help %s: %v, %q; %s -h: %v, %q", cmd, errHelp, help.String(), cmd, errDirect, direct.String())
		}
	}
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "help"}, {"help", "demo", "codec"}} {
		if err := run(args, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// TestDemoReceiverFailure: a receive the demo finds corrupted ends the
// stage with that error, not with the stall that the SENDs no receive
// takes any more would end in (errStalled, after 10 s).
func TestDemoReceiverFailure(t *testing.T) {
	cfg := demoConfig{size: 5000, iters: 40, depth: 4}
	a, b, err := openPair(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	defer b.close()
	bad := errors.New("message 3 arrived corrupted")
	r, err := startReceiver(b, cfg, func(i int, _ *verbs.WC) error {
		if i == 3 {
			return bad
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = pipeline(a, cfg, stage{
		mk: func(i int) *verbs.SendWR {
			return &verbs.SendWR{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.slot(cfg, i%cfg.depth)}}
		},
		done: func(int, *verbs.WC) error { return nil },
		r:    r,
	})
	if !errors.Is(err, bad) {
		t.Fatalf("pipeline returned %v, want the receiver's %v", err, bad)
	}
	if err := r.drain(); !errors.Is(err, bad) {
		t.Errorf("drain returned %v, want %v", err, bad)
	}
}

// TestLoopbackDemo runs the README's main job at a small size: every
// operation must complete and verify its data over real UDP sockets, and
// report a bandwidth, or for an atomic a rate of operations; with -stats
// the devices' counters follow.
func TestLoopbackDemo(t *testing.T) {
	var out bytes.Buffer
	if err := demo(&out, demoConfig{size: 5000, iters: 40, depth: 4, stats: true}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	for _, op := range []string{"SEND", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP"} {
		unit := " MB/s  verified"
		if strings.HasPrefix(op, "ATOMIC") {
			unit = " kop/s  verified"
		}
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  "+op+" ") })
		if i < 0 || !strings.Contains(lines[i], " µs ") || !strings.HasSuffix(lines[i], unit) {
			t.Errorf("report lacks %s with its time per operation and a rate ending in %q:\n%s", op, unit, out.String())
		}
	}
	if got := strings.Count(out.String(), "\nlink goverbs"); got != 2 {
		t.Errorf("%d counter lines, want one per device:\n%s", got, out.String())
	}
	if got := strings.Count(out.String(), "verified"); got != 6 {
		t.Errorf("%d operations verified, want 6:\n%s", got, out.String())
	}
	// The command takes K and M sizes, and prints no counters unasked.
	out.Reset()
	if err := run([]string{"demo", "-s", "5K", "-n", "3"}, &out, io.Discard); err != nil ||
		!strings.Contains(out.String(), "  RDMA_WRITE                  5120 ") || strings.Contains(out.String(), "\nlink goverbs") {
		t.Errorf("demo -s 5K -n 3: %v\n%s", err, out.String())
	}
}

func TestDeviceTools(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"ibv_devinfo", "-i", "1"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hca_id:\tgoverbs0\n", "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n", "\t\t\tactive_mtu:\t\t4096 (5)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ibv_devinfo output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run([]string{"ibv_devinfo", "-l", "-d", "gv7"}, &out, io.Discard); err != nil || out.String() != "1 HCA found:\n\tgv7\n\n" {
		t.Errorf("ibv_devinfo -l: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := run([]string{"ibv_devices"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "    goverbs0        \t") {
		t.Errorf("ibv_devices: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := run([]string{"ibv_devinfo", "-v"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "\tmax_qp_rd_atom:\t\t\t128\n") ||
		!strings.Contains(out.String(), "\t\t\tGID[  0]:\t\t::ffff:127.0.0.1, RoCE v2\n") {
		t.Errorf("ibv_devinfo -v: %q, %v", out.String(), err)
	}
	// The usage is rdma-core's, in the perftest tools' layout.
	var usage bytes.Buffer
	if err := run([]string{"ibv_devinfo", "--help"}, io.Discard, &usage); err != nil ||
		!strings.HasPrefix(usage.String(), "Usage: ibv_devinfo ") || !strings.Contains(usage.String(), "\n  -d, --ib-dev=<dev> ") {
		t.Errorf("ibv_devinfo --help: %v\n%s", err, usage.String())
	}
	out.Reset()
	if err := run([]string{"ibv_devinfo", "--ib-dev=gv8", "--list"}, &out, io.Discard); err != nil || out.String() != "1 HCA found:\n\tgv8\n\n" {
		t.Errorf("ibv_devinfo --ib-dev=gv8 --list: %q, %v", out.String(), err)
	}
	for _, bad := range [][]string{{"ibv_devinfo", "-i", "-1"}, {"ibv_devinfo", "--addr", "x"}, {"ibv_devices", "extra"},
		{"ib_write_bw", "-n", "4"}, {"ib_read_lat", "--nonsense"}} {
		if err := run(bad, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

// TestDemoCapture: with -pcap the demo leaves a capture the decoder reads
// back with valid ICRCs.
func TestDemoCapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.pcap")
	var out bytes.Buffer
	if err := run([]string{"demo", "-s", "5000", "-n", "3", "-pcap", path}, &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	out.Reset()
	if err := run([]string{"decode", "-all-ports", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "RC_RDMA_READ_REQUEST") || !strings.Contains(out.String(), " 0 malformed or with a bad ICRC") {
		t.Errorf("decoded capture:\n%s", out.String())
	}
}

// TestStartProfile: GOVERBS_CPUPROFILE's helper does nothing without a
// path, writes a profile to one, and reports a path it cannot create.
func TestStartProfile(t *testing.T) {
	stop, err := startProfile("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err = startProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("profile %s: %v, %v; want a non-empty file", path, fi, err)
	}
	if _, err := startProfile(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Error("a profile in a missing directory did not fail")
	}
}

// TestPacketReport: the demo's summary keeps the duplicates of what was
// sent again apart from the packets dropped as bad or unexpected.
func TestPacketReport(t *testing.T) {
	var a, b verbs.Counters
	a[verbs.SentPkts], b[verbs.SentPkts] = 100, 40
	a[verbs.RcvdPkts], b[verbs.RcvdPkts] = 39, 98
	a[verbs.RetransmittedPkts] = 4
	a[verbs.DropDuplicateResponse], b[verbs.DropBadICRC], b[verbs.DropUnknownQP] = 3, 1, 1
	b[verbs.SendRNRErr] = 2
	var out bytes.Buffer
	packetReport(&out, a, b)
	want := "\n  packets: 140 sent, 137 received, 2 RNR NAKs, 2 dropped as bad or unexpected\n" +
		"  resent:  4 packets (tail probes after a late ACK, or go-back-N), 3 duplicate responses to them dropped\n"
	if out.String() != want {
		t.Errorf("packetReport:\n%q\nwant\n%q", out.String(), want)
	}
}

// TestDemoSendNoRNR: the SEND stage posts a send only once the receive it
// needs is posted, so the receiving device sends no RNR NAK (without the
// wait for it, 17 in 2000 sends), however far the receiver goroutine lags.
func TestDemoSendNoRNR(t *testing.T) {
	cfg := demoConfig{size: 4096, iters: 2000, depth: 2}
	a, b, err := openPair(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	defer b.close()
	if _, err := runSend(a, b, cfg); err != nil {
		t.Fatal(err)
	}
	if n := b.dev.Counters().Get(verbs.SendRNRErr); n != 0 {
		t.Errorf("%d RNR NAKs sent", n)
	}
}

// TestOpenEndpointFailure: an endpoint that fails half-way (here its CQ,
// too deep for the device) closes the device it opened.
func TestOpenEndpointFailure(t *testing.T) {
	before := len(verbs.Devices())
	if e, err := openEndpoint(demoConfig{size: 8, iters: 1, depth: 1 << 30}, nil); err == nil {
		e.close()
		t.Fatal("an endpoint with a CQ of 2^31 entries opened")
	}
	if n := len(verbs.Devices()); n != before {
		t.Errorf("%d devices open after the failure, %d before", n, before)
	}
}
