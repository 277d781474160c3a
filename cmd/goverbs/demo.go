package main

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/goverbs/goverbs/internal/devinfo"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"
)

// demoConfig sizes the loopback demo.
type demoConfig struct {
	size    int       // message size of SEND/WRITE/READ
	iters   int       // messages per operation
	depth   int       // work requests kept outstanding
	capture io.Writer // pcap of the first device's packets, or nil
	stats   bool      // print the devices' counters at the end
}

func demoCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	cfg := defaultDemo
	fs.Var(toolflag.Size{P: &cfg.size}, "s", "message `size` in bytes, K or M suffix allowed")
	fs.IntVar(&cfg.iters, "n", cfg.iters, "`iterations` per operation")
	pcap := fs.String("pcap", "", "write the first device's packets to `FILE` (pcap, for Wireshark)")
	fs.BoolVar(&cfg.stats, "stats", false, "print both devices' counters at the end, as 'rdma statistic' does")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: goverbs demo [-s SIZE] [-n ITERS] [-pcap FILE] [-stats]\n"+
			"  run SEND, RDMA WRITE (with and without immediate), RDMA READ and both atomics\n"+
			"  between two devices on loopback UDP, verify the data and report the speed")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return ignoreHelp(err)
	}
	switch {
	case cfg.size < 8 || cfg.size > maxDemoSize:
		return fmt.Errorf("%w: -s %d: the message size must be 8 to %d bytes (each device holds %d messages of -s bytes)",
			errUsage, cfg.size, maxDemoSize, cfg.depth)
	case cfg.iters < 1:
		return fmt.Errorf("%w: -n %d: the iterations must be at least 1", errUsage, cfg.iters)
	}
	if *pcap != "" {
		f, err := os.Create(*pcap)
		if err != nil {
			return err
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		cfg.capture = w
	}
	if err := demo(stdout, cfg); err != nil {
		return err
	}
	if *pcap != "" {
		fmt.Fprintf(stdout, "\npackets of goverbs0 written to %s; read them with 'goverbs decode -all-ports %s'\n"+
			"(the demo uses free UDP ports: in Wireshark, Decode As... UDP port -> RRoCE)\n", *pcap, *pcap)
	}
	return nil
}

var defaultDemo = demoConfig{size: 64 << 10, iters: 500, depth: 16}

// maxDemoSize bounds -s so that the two devices' buffers, depth messages
// each, stay within 2 GiB: a size the machine cannot hold would be
// killed for want of memory, not refused.
const maxDemoSize = 64 << 20

// endpoint is one side of the demo: a device with a PD, CQs, a QP and two
// registered buffers.
type endpoint struct {
	dev      *verbs.Device
	pd       *verbs.PD
	scq, rcq *verbs.CQ
	qp       *verbs.QP
	buf      *verbs.MR // depth slots of size bytes: SEND/WRITE/READ data
	word     *verbs.MR // 8-byte atomic target / result
	mem      *verbs.Buffer
}

func openEndpoint(cfg demoConfig, capture io.Writer) (_ *endpoint, err error) {
	// Port 0 picks a free UDP port, so the demo runs next to anything
	// already on 4791 (such as the kernel's rdma_rxe).
	dev, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort("127.0.0.1:0"), Capture: capture})
	if err != nil {
		return nil, err
	}
	e := &endpoint{dev: dev}
	defer func() {
		if err != nil {
			e.close() // what was opened before the failure
		}
	}()
	if e.pd, err = dev.AllocPD(); err != nil {
		return nil, err
	}
	if e.scq, err = dev.CreateCQ(2 * cfg.depth); err != nil {
		return nil, err
	}
	if e.rcq, err = dev.CreateCQ(2 * cfg.depth); err != nil {
		return nil, err
	}
	e.qp, err = e.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: e.scq, RecvCQ: e.rcq,
		Cap: verbs.QPCap{MaxSendWR: uint32(cfg.depth), MaxRecvWR: uint32(cfg.depth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return nil, err
	}
	// One slot per outstanding work request, so every message can be
	// checked after its completion, and an 8-byte atomic target.
	slots := cfg.depth * cfg.size
	if e.mem, err = verbs.AllocBuffer(slots + 8); err != nil {
		return nil, err
	}
	all := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	if e.buf, err = e.pd.RegMR(e.mem.Bytes()[:slots], all); err != nil {
		return nil, err
	}
	if e.word, err = e.pd.RegMR(e.mem.Bytes()[slots:], all); err != nil {
		return nil, err
	}
	return e, nil
}

// close releases what the endpoint holds, as much of it as was opened.
func (e *endpoint) close() {
	if e.qp != nil {
		e.qp.Close()
	}
	for _, mr := range []*verbs.MR{e.buf, e.word} {
		if mr != nil {
			mr.Close()
		}
	}
	if e.mem != nil {
		e.mem.Close()
	}
	e.dev.Close()
}

// openPair opens the demo's two endpoints, the first capturing to
// cfg.capture, and connects their QPs.
func openPair(cfg demoConfig) (a, b *endpoint, err error) {
	if a, err = openEndpoint(cfg, cfg.capture); err != nil {
		return nil, nil, err
	}
	if b, err = openEndpoint(cfg, nil); err != nil {
		a.close()
		return nil, nil, err
	}
	opts := verbs.DefaultConnectOptions()
	opts.MinRNRTimer = 1 // 10 µs: a late receive costs little
	if err = a.qp.ConnectRC(0x1000, b.qp.Endpoint(0x2000), opts); err == nil {
		err = b.qp.ConnectRC(0x2000, a.qp.Endpoint(0x1000), opts)
	}
	if err != nil {
		a.close()
		b.close()
		return nil, nil, err
	}
	return a, b, nil
}

// demo runs every RC operation between two devices on loopback UDP,
// verifies the data and prints a report per operation.
func demo(w io.Writer, cfg demoConfig) error {
	a, b, err := openPair(cfg)
	if err != nil {
		return err
	}
	defer a.close()
	defer b.close()
	port, _ := a.dev.QueryPort(1)
	fmt.Fprintf(w, "goverbs loopback demo: two software RDMA devices speaking RoCEv2 over UDP\n")
	for _, e := range []*endpoint{a, b} {
		gid, _ := e.dev.QueryGID(1, 0)
		fmt.Fprintf(w, "  %-9s %-16v GID %-18v QPN 0x%06x\n", e.dev.Name(), e.dev.Addr(), gid, uint32(e.qp.QPN()))
	}
	fmt.Fprintf(w, "  RC, path MTU %v, %d work requests in flight\n\n", port.ActiveMTU, cfg.depth)
	fmt.Fprintf(w, "  %-22s %9s %7s %10s %10s %12s  %s\n", "operation", "bytes", "iters", "time", "per op", "rate", "data")

	for _, op := range []struct {
		name   string
		run    func(a, b *endpoint, cfg demoConfig) (int, error)
		atomic bool
	}{
		{"SEND", runSend, false},
		{"RDMA_WRITE", runWrite(false), false},
		{"RDMA_WRITE_WITH_IMM", runWrite(true), false},
		{"RDMA_READ", runRead, false},
		{"ATOMIC_FETCH_AND_ADD", runFetchAdd, true},
		{"ATOMIC_CMP_AND_SWP", runCmpSwap, true},
	} {
		start := time.Now()
		size, err := op.run(a, b, cfg)
		el := time.Since(start)
		if err != nil {
			return fmt.Errorf("%s: %w", op.name, err)
		}
		fmt.Fprintf(w, "  %-22s %9d %7d %8.1fms %7.1f µs %s  verified\n", op.name, size, cfg.iters,
			float64(el.Microseconds())/1000, el.Seconds()*1e6/float64(cfg.iters), rate(size, cfg.iters, el, op.atomic))
	}
	fmt.Fprintf(w, "  (time: all iterations, %d in flight; per op: time / iters; MB = 10^6 bytes)\n", cfg.depth)
	packetReport(w, a.dev.Counters(), b.dev.Counters())
	if cfg.stats {
		fmt.Fprintf(w, "\ncounters, as 'rdma statistic show link' prints them:\n")
		devinfo.Stat(w, a.dev)
		devinfo.Stat(w, b.dev)
	}
	return nil
}

// rate is an operation's rate, 12 columns wide: the bytes a second of a
// data transfer, the operations a second of an atomic, whose 8 bytes a
// bandwidth would make look slow.
func rate(size, iters int, el time.Duration, atomic bool) string {
	if atomic {
		return fmt.Sprintf("%6.0f kop/s", float64(iters)/el.Seconds()/1e3)
	}
	return fmt.Sprintf("%7.1f MB/s", float64(size*iters)/el.Seconds()/1e6)
}

// packetReport sums the two devices' packets. What was sent again — the
// go-back-N after a NAK, an RNR NAK or a timeout, or a tail probe of a
// flight that stalled (a peer descheduled for a moment, on a busy
// machine) — the peer answers as a duplicate where it had taken it, and
// the answers that come after the original ones are dropped as duplicate
// responses: counted apart from the drops of packets that were bad or
// unexpected, which a newcomer would read as lost.
func packetReport(w io.Writer, a, b verbs.Counters) {
	sum := func(c verbs.Counter) uint64 { return a.Get(c) + b.Get(c) }
	dups := sum(verbs.DropDuplicateResponse)
	fmt.Fprintf(w, "\n  packets: %d sent, %d received, %d RNR NAKs, %d dropped as bad or unexpected\n",
		sum(verbs.SentPkts), sum(verbs.RcvdPkts), sum(verbs.SendRNRErr), a.Drops()+b.Drops()-dups)
	fmt.Fprintf(w, "  resent:  %d packets (tail probes after a late ACK, or go-back-N), %d duplicate responses to them dropped\n",
		sum(verbs.RetransmittedPkts), dups)
}
