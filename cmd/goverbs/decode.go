package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/capture/pcapread"
	"github.com/goverbs/goverbs/internal/wire"
)

// decodeFile prints one line per RoCEv2 frame of a pcap or pcapng file and a summary.
func decodeFile(path string, allPorts bool, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := pcapread.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.AnyPort = allPorts
	var n, bad int
	var first capture.Frame
	for {
		fr, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: frame %d: %w", path, n+1, err)
		}
		if n == 0 {
			first = fr
		}
		n++
		line, ok := describe(&fr.Envelope, fr.Packet)
		if !ok {
			bad++
		}
		fmt.Fprintf(stdout, "%4d %10.6f %s\n", n, fr.Time.Sub(first.Time).Seconds(), line)
	}
	fmt.Fprintf(stdout, "%d RoCEv2 packets, %d malformed or with a bad ICRC\n", n, bad)
	return nil
}

// describe formats a packet on one line with its addresses and ICRC
// verdict, and reports whether the packet is sound.
func describe(e *wire.Envelope, p wire.Packet) (line string, ok bool) {
	verdict := " icrc ok"
	if err := p.Validate(); err != nil {
		verdict = ""
	} else if p.CheckICRC(e) != nil {
		verdict = fmt.Sprintf(" ICRC BAD (wire %#08x, computed %#08x)", p.ICRC(), p.ComputeICRC(e))
	}
	line = fmt.Sprintf("%s > %s %s%s", netip.AddrPortFrom(e.Src.Unmap(), e.SrcPort),
		netip.AddrPortFrom(e.Dst.Unmap(), e.DstPort), p, verdict)
	return line, verdict == " icrc ok"
}
