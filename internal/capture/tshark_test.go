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
)

// tsharkFields are the InfiniBand fields compared per frame. Extended-header
// fields are empty when tshark does not decode that header.
var tsharkFields = []string{
	"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.padcnt",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.aeth.msn", "infiniband.deth.srcqp", "infiniband.atomicacketh.origremdt",
	"infiniband.invariant.crc",
}

// TestTsharkDecodesEveryOpcode writes one frame of every opcode the codec
// knows and asks Wireshark's dissector, an independent implementation, to
// decode them. CI installs tshark and sets GOVERBS_REQUIRE_TSHARK=1 so the
// check cannot silently be skipped there.
func TestTsharkDecodesEveryOpcode(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("GOVERBS_REQUIRE_TSHARK") != "" {
			t.Fatal("tshark is required (GOVERBS_REQUIRE_TSHARK is set) but not installed")
		}
		t.Skip("tshark not installed (apt-get install tshark)")
	}
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

	args := []string{"-r", path, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"}
	// Payload heuristics (RPC-over-RDMA and friends) misfire on test data.
	for _, h := range []string{"rpcordma", "smb_direct", "smc", "nvme-rdma", "lnet", "iser", "infiniband_sdp", "fcoib"} {
		args = append(args, "--disable-protocol", h)
	}
	for _, f := range tsharkFields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(sent) {
		t.Fatalf("tshark decoded %d frames, wrote %d:\n%s", len(lines), len(sent), out)
	}
	for i, line := range lines {
		p := sent[i]
		got := strings.Split(line, "|")
		want := expectedFields(p)
		for j, name := range tsharkFields {
			if want[j] == "" || (got[j] == "" && optional(name)) {
				continue
			}
			if !sameNumber(got[j], want[j]) {
				t.Errorf("frame %d (%v): %s = %q, want %s", i+1, p.Opcode(), name, got[j], want[j])
			}
		}
	}
}

// optional reports whether tshark may leave a field out: its 4.0 dissector
// does not decode the headers of the IBA 1.5 opcodes (FLUSH, ATOMIC WRITE)
// or of a CNP.
func optional(field string) bool {
	return !strings.HasPrefix(field, "infiniband.bth.")
}

func expectedFields(p wire.Packet) []string {
	b := p.BTH()
	v := []string{
		strconv.Itoa(int(b.Opcode())), strconv.Itoa(int(b.DestQP())), strconv.Itoa(int(b.PSN())), strconv.Itoa(b.PadCount()),
		"", "", "", "", "", "", "",
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
