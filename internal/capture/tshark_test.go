package capture_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/wire"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// tsharkFields are the InfiniBand fields compared per frame. Extended-header
// fields are empty when tshark does not decode that header.
var tsharkFields = []string{
	"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.padcnt",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.aeth.msn", "infiniband.deth.srcqp", "infiniband.atomicacketh.origremdt",
	"infiniband.invariant.crc", "infiniband.ieth",
}

// TestTsharkDecodesEveryOpcode writes one frame of every opcode the codec
// knows and asks Wireshark's dissector, an independent implementation, to
// decode them.
func TestTsharkDecodesEveryOpcode(t *testing.T) {
	tshark := lookTshark(t)
	path := filepath.Join(t.TempDir(), "opcodes.pcap")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewWriter(file)
	if err != nil {
		t.Fatal(err)
	}
	var sent []wire.Packet
	for op := range 256 {
		if !wire.Opcode(op).Info().Valid() {
			continue
		}
		e := envelopes[len(sent)%len(envelopes)]
		p := samplePacket(t, wire.Opcode(op), len(sent), &e)
		if err := w.WriteFrame(&capture.Frame{Envelope: e, Packet: p}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, p)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}

	lines := tsharkDecode(t, tshark, path, tsharkFields)
	if len(lines) != len(sent) {
		t.Fatalf("tshark decoded %d frames, wrote %d", len(lines), len(sent))
	}
	for i, got := range lines {
		p := sent[i]
		want := expectedFields(p)
		for j, name := range tsharkFields {
			if want[j] == "" || (got[j] == "" && optional(name)) {
				continue
			}
			if name == "infiniband.ieth" && got[j] != want[j] || name != "infiniband.ieth" && !sameNumber(got[j], want[j]) {
				t.Errorf("frame %d (%v): %s = %q, want %s", i+1, p.Opcode(), name, got[j], want[j])
			}
		}
	}
}

// lookTshark returns tshark's path, or skips the test when it is not
// installed. CI installs tshark and sets GOVERBS_REQUIRE_TSHARK=1 so the
// check cannot silently be skipped there.
func lookTshark(t *testing.T) string {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("GOVERBS_REQUIRE_TSHARK") != "" {
			t.Fatal("tshark is required (GOVERBS_REQUIRE_TSHARK is set) but not installed")
		}
		t.Skip("tshark not installed (apt-get install tshark)")
	}
	return tshark
}

// tsharkDecode has tshark decode the pcap at path and returns, per frame,
// the fields asked for.
func tsharkDecode(t *testing.T, tshark, path string, fields []string) [][]string {
	args := []string{"-r", path, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"}
	// Payload heuristics (RPC-over-RDMA and friends) misfire on test data.
	for _, h := range []string{"rpcordma", "smb_direct", "smc", "nvme-rdma", "lnet", "iser", "infiniband_sdp", "fcoib"} {
		args = append(args, "--disable-protocol", h)
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var lines [][]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		lines = append(lines, strings.Split(line, "|"))
	}
	return lines
}

// optional reports whether tshark may leave a field out: its 4.0 dissector
// does not decode the headers of the IBA 1.5 opcodes (FLUSH, ATOMIC WRITE)
// or of a CNP. It decodes the IETH.
func optional(field string) bool {
	return !strings.HasPrefix(field, "infiniband.bth.") && field != "infiniband.ieth"
}

func expectedFields(p wire.Packet) []string {
	b := p.BTH()
	v := []string{
		strconv.Itoa(int(b.Opcode())), strconv.Itoa(int(b.DestQP())), strconv.Itoa(int(b.PSN())), strconv.Itoa(b.PadCount()),
		"", "", "", "", "", "", "", "",
	}
	if h := p.RETH(); h != nil {
		v[4], v[5], v[6] = fmt.Sprint(h.VA()), fmt.Sprint(h.RKey()), fmt.Sprint(h.DMALength())
	}
	if h := p.AETH(); h != nil {
		v[7] = fmt.Sprint(h.MSN())
	}
	if h := p.DETH(); h != nil {
		v[8] = fmt.Sprint(h.SrcQP())
	}
	if h := p.AtomicAckETH(); h != nil {
		v[9] = fmt.Sprint(h.OrigData())
	}
	if h := p.IETH(); h != nil {
		v[11] = fmt.Sprintf("%08x", h.RKey()) // a byte field: tshark shows the bytes in hex
	}
	if p.Opcode().Transport() != wire.TransportCNP {
		// Wireshark shows the ICRC read big-endian from the wire bytes.
		tr := p[len(p)-wire.ICRCSize:]
		v[10] = fmt.Sprint(uint32(tr[0])<<24 | uint32(tr[1])<<16 | uint32(tr[2])<<8 | uint32(tr[3]))
	}
	return v
}

// sameNumber compares tshark's rendering (decimal or 0x-hex) with a decimal.
func sameNumber(got, want string) bool {
	g, err1 := strconv.ParseUint(got, 0, 64)
	w, err2 := strconv.ParseUint(want, 10, 64)
	return err1 == nil && err2 == nil && g == w
}

// TestTsharkDecodesSendWithInvalidate has a device send a SEND WITH
// INVALIDATE of two packets and asks tshark to decode what it captured:
// SEND FIRST, then SEND LAST WITH INVALIDATE carrying the key in its IETH,
// each with its ICRC.
func TestTsharkDecodesSendWithInvalidate(t *testing.T) {
	tshark := lookTshark(t)
	path := filepath.Join(t.TempDir(), "send-inv.pcap")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	p := verbstest.New(t, verbstest.Options{CaptureA: file})
	src, dst := p.A.Buffer(t, 5000, 1), p.B.Buffer(t, 5000, 0)
	if err := p.B.QP.PostRecv(&verbs.RecvWR{SGList: []verbs.SGE{dst.SGE(0, 5000)}}); err != nil {
		t.Fatal(err)
	}
	const rkey = 0x00c0ffee
	wr := &verbs.SendWR{Opcode: verbs.WRSendWithInv, Flags: verbs.SendSignaled, SGList: []verbs.SGE{src.SGE(0, 5000)}, InvalidateRKey: rkey}
	if err := p.A.QP.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	// The peer has no such window: the SEND is refused, after it was sent.
	if wc := verbstest.MustPoll(t, p.A.SendCQ, 1)[0]; wc.Status != verbs.WCRemInvReqErr {
		t.Fatalf("completion %+v, want REM_INV_REQ_ERR", wc)
	}
	p.A.Dev.Close() // flushes the capture
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, f := range tsharkDecode(t, tshark, path, []string{"ip.src", "infiniband.bth.opcode", "infiniband.ieth", "infiniband.invariant.crc"}) {
		if f[0] == "10.0.0.1" { // what A sent
			got = append(got, f[1:])
		}
	}
	want := [][]string{{"0", "", ""}, {"22", "00c0ffee", ""}}
	if len(got) != len(want) {
		t.Fatalf("tshark decoded %d frames from A: %q", len(got), got)
	}
	for i := range want {
		if got[i][0] != want[i][0] || got[i][1] != want[i][1] || got[i][2] == "" {
			t.Errorf("frame %d: opcode %s, IETH %q, ICRC %q; want opcode %s, IETH %q and an ICRC", i, got[i][0], got[i][1], got[i][2], want[i][0], want[i][1])
		}
	}
}
