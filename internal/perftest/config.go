package perftest

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/goverbs/goverbs/internal/oob"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"
)

// Limits perftest 4.5 enforces on its options.
const (
	minIters   = 5
	maxIters   = 100000000
	maxTxDepth = 15000
	maxRxDepth = 16384
	maxCQMod   = 1024
	maxInline  = 912
	maxSize    = 1 << 23 // the largest size of -a
	maxGIDIdx  = 64
	maxQPs     = 16384
	// unackedMaxRx is the most receives UC and UD tests post up front:
	// their default receive depth is the iteration count, so that no
	// SEND finds none (perftest's UC_MAX_RX).
	unackedMaxRx = 16000
	// defRxDepth is the SEND tests' default receive depth (DEF_RX_SEND).
	defRxDepth = 512
	// cqModLimit is the size above which completions are requested for
	// every message, so that the bandwidth is not computed from a few
	// completions (perftest's MSG_SIZE_CQ_MOD_LIMIT).
	cqModLimit = 8192
	// noPeakIters is the operation count above which BW tests skip the
	// quadratic peak search. perftest counts the iterations of one QP;
	// goverbs counts those of all -q QPs, whose operations the search
	// walks.
	noPeakIters = 20000
)

// Config holds one run's options: perftest's names and defaults
// (doc/tools.md §2.2), after perftest's own adjustments.
type Config struct {
	Test Test
	Prog string // the tool name, for messages

	Port     int    // -p: TCP port of the control channel
	IBDev    string // -d: the goverbs device's name
	IBPort   int    // -i: must be 1
	QPs      int    // -q: QPs of a BW test, each running Iters operations
	Size     int    // -s: message size
	All      bool   // -a: sizes 2, 4, ... 2^23
	Iters    int    // -n
	Duration int    // -D: seconds; 0 means iteration mode
	Margin   int    // -f: seconds at each end of a -D run not measured
	TxDepth  int    // -t
	RxDepth  int    // -r: receives posted (SEND tests)
	MTU      int    // -m: path MTU in bytes; 0 means the port's active MTU
	GIDIdx   int    // -x: local GID index
	CQMod    int    // -Q: a completion is requested every CQMod sends
	OutReads int    // -o: READs/atomics in flight (READ and atomic tests)
	Inline   int    // -I: largest message sent inline
	Timeout  int    // -u: local ACK timeout exponent
	SL       int    // -S: service level (not on the RoCE wire)
	Atomic   AtomicType
	NoPeak   bool // -N: skip the peak bandwidth search
	Gbits    bool // --report_gbits
	Counters bool // --stats: print the device's counters at exit (goverbs)
	CPUFreq  bool // -F: perftest's CPU frequency warning; nothing to warn about here
	Events   bool // -e: sleep on completion channels instead of polling the CQs
	Duplex   bool // -b: both sides send and receive at once (BW tests)
	// Conn is the connection type (-c): RC, UC or UD (doc/tools.md §2.11).
	Conn verbs.QPType
	// sizeSet says -s was given: a UD size beyond the MTU is then an
	// error rather than cut to the MTU.
	sizeSet bool

	// Server is the host to connect to; empty means run as the server.
	Server string
	// Addr is the device's RoCE address: an IP with optional :port. Empty
	// means the local address of the TCP connection, on port 4791.
	Addr string
	// Stats, if set, sees the device at the end of the run, successful or
	// not, before it closes: the tool prints its counters there with
	// --stats or GOVERBS_COUNTERS=1, so that retransmissions show beside a
	// figure.
	Stats func(*verbs.Device)
	// Stderr takes perftest's notes and warnings; ParseArgs sets it to
	// its own stderr. Nil discards them.
	Stderr io.Writer
}

// client reports whether this side connects (and drives the BW tests).
func (c *Config) client() bool { return c.Server != "" }

// ParseArgs parses a perftest command line for the tool prog. As with GNU
// getopt, options may follow the host. Errors and usage go to stderr.
func ParseArgs(prog string, args []string, stderr io.Writer) (Config, error) {
	t, ok := Tests[prog]
	if !ok {
		return Config{}, fmt.Errorf("unknown perftest tool %q", prog)
	}
	c := Config{Test: t, Prog: prog, Port: 18515, IBPort: 1, Iters: 1000, Timeout: 14, GIDIdx: -1, QPs: 1,
		Margin: -1, Atomic: FetchAndAdd, TxDepth: 128, RxDepth: 1, CQMod: 100, OutReads: -1}
	switch {
	case t.Verb == Atomic:
		c.Size = 8
	case t.Lat:
		c.Size = 2
	default:
		c.Size = 65536
	}
	if prog == "ib_write_bw" {
		c.Iters = 5000
	}
	if t.Lat {
		c.TxDepth = 1
	}
	if t.Verb == Send {
		c.RxDepth = defRxDepth
	}

	connType := "RC"
	// Options of perftest's other tests are taken (check refuses them as
	// perftest does) but listed only where they do something, as
	// perftest's usage lists them.
	only := func(applies bool, o toolflag.Option) toolflag.Option {
		if !applies {
			return toolflag.Hide(o)
		}
		return o
	}
	bw, readLike := !t.Lat, t.Verb.readLike()
	fs := toolflag.New(prog, stderr, []toolflag.Option{
		toolflag.Opt("p", "port", "port", "listen on/connect to TCP port <port> (default 18515)", &c.Port),
		toolflag.Opt("d", "ib-dev", "dev", "name of the goverbs device (default goverbs0)", &c.IBDev),
		toolflag.Opt("i", "ib-port", "port", "port of the device (only 1)", &c.IBPort),
		toolflag.Opt("s", "size", "size", "message size, K or M suffix allowed (default "+strconv.Itoa(c.Size)+")", sizeValue{toolflag.Size{P: &c.Size}}),
		toolflag.Opt("a", "all", "", "run sizes from 2 to 2^23", &c.All),
		only(bw, toolflag.Opt("b", "bidirectional", "", "measure bidirectional bandwidth (BW tests; default unidirectional)", &c.Duplex)),
		toolflag.Opt("n", "iters", "iters", "number of exchanges, at least 5 (default "+strconv.Itoa(c.Iters)+")", &c.Iters),
		toolflag.Opt("D", "duration", "seconds", "run for <seconds> instead of a number of iterations", &c.Duration),
		toolflag.Opt("f", "margin", "seconds", "seconds not measured at each end of a --duration run (default duration/4)", &c.Margin),
		toolflag.Opt("t", "tx-depth", "dep", "size of the send queue (default "+strconv.Itoa(c.TxDepth)+")", &c.TxDepth),
		only(t.Verb == Send, toolflag.Opt("r", "rx-depth", "dep", "receives posted (SEND tests; default "+strconv.Itoa(c.RxDepth)+")", &c.RxDepth)),
		toolflag.Opt("m", "mtu", "mtu", "path MTU: 256, 512, 1024, 2048 or 4096 (default the port's active MTU)", &c.MTU),
		toolflag.Opt("x", "gid-index", "index", "local GID index (goverbs devices have one GID, index 0)", &c.GIDIdx),
		only(bw, toolflag.Opt("Q", "cq-mod", "num", "request a completion every <num> sends (default 100)", &c.CQMod)),
		only(readLike, toolflag.Opt("o", "outs", "num", "READs/atomics in flight (READ/atomic tests; default the device maximum)", &c.OutReads)),
		only(!readLike, toolflag.Opt("I", "inline_size", "size", "send messages up to <size> bytes inline (default 0)", &c.Inline)),
		toolflag.Opt("u", "qp-timeout", "timeout", "local ACK timeout exponent (default 14)", &c.Timeout),
		toolflag.Opt("S", "sl", "sl", "service level (default 0)", &c.SL),
		only(t.Verb == Atomic, toolflag.Opt("A", "atomic_type", "type", "CMP_AND_SWAP or FETCH_AND_ADD (atomic tests; default FETCH_AND_ADD)", atomicValue{&c.Atomic})),
		only(bw, toolflag.Opt("N", "noPeak", "", "do not compute the peak bandwidth", &c.NoPeak)),
		only(t.Verb != Write, toolflag.Opt("e", "events", "", "sleep on CQ events (default poll)", &c.Events)),
		toolflag.Opt("F", "CPU-freq", "", "accepted for compatibility: goverbs measures time, not CPU cycles", &c.CPUFreq),
		only(bw, toolflag.Opt("", "report_gbits", "", "report bandwidth in Gb/s instead of MB/s", &c.Gbits)),
		toolflag.Opt("", "stats", "", "goverbs: print the device's counters to stderr at exit, as `rdma statistic` does", &c.Counters),
		toolflag.Opt("c", "connection", "type", "connection type: RC, UC (SEND and WRITE tests) or UD (SEND tests) (default RC)", &connType),
		only(bw, toolflag.Opt("q", "qp", "num", "number of QPs, each running the iterations (BW tests; default 1)", &c.QPs)),
		toolflag.Opt("", "addr", "ip[:port]", "goverbs: RoCE address of this device (default: the TCP connection's local address, port 4791)", &c.Addr),
		toolflag.Refuse("R", "rdma_cm", "", "(connecting through RDMA-CM) is not supported by goverbs: leave it out, the tools connect through perftest's TCP exchange"),
		toolflag.Refuse("z", "com_rdma_cm", "", "(exchanging through RDMA-CM) is not supported by goverbs: leave it out, the tools exchange over TCP"),
		toolflag.Refuse("", "report-both", "", "is not supported by goverbs: a bidirectional run (-b) reports the sum"),
		toolflag.Refuse("l", "post_list", "list", "(posting lists of WQEs) is not supported by goverbs"),
		toolflag.Refuse("C", "report-cycles", "", "is not supported by goverbs, which reports times, not CPU cycles"),
		toolflag.Refuse("H", "report-histogram", "", "is not supported by goverbs"),
		toolflag.Refuse("U", "report-unsorted", "", "is not supported by goverbs"),
		toolflag.Refuse("T", "tos", "tos", "(the IP type of service) is not supported by goverbs"),
		toolflag.Refuse("V", "version", "", "is not supported by goverbs: the goverbs command's version is its module's (go version -m)"),
	})
	hosts, set, err := fs.Parse(args)
	if err != nil {
		return c, err
	}
	if c.Conn, err = connection(connType, t.Verb); err != nil {
		return c, err
	}
	if c.Server, err = oob.ServerHost(hosts); err != nil {
		return c, err
	}
	c.sizeSet = set["s"] || set["size"]
	c.Stderr = stderr
	return c, c.check(set)
}

// connection returns the QP type of -c s for a test of verb v, refusing
// what perftest 4.5 refuses, with its words (doc/tools.md §2.11), and the types
// goverbs does not have.
func connection(s string, v Verb) (verbs.QPType, error) {
	switch s {
	case "RC":
		return verbs.QPTypeRC, nil
	case "UC":
		if v.readLike() {
			return 0, errors.New(" UC connection not possible in READ/ATOMIC verbs")
		}
		return verbs.QPTypeUC, nil
	case "UD":
		if v != Send {
			return 0, errors.New(" UD connection only possible in SEND verb")
		}
		return verbs.QPTypeUD, nil
	case "XRC", "DC", "SRD", "RawEth":
		return 0, fmt.Errorf("connection type %s: goverbs runs RC, UC and UD", s)
	}
	return 0, errors.New(" Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}")
}

// check applies perftest's range checks and its adjustments of one option
// to another, as perftest 4.5 makes them (doc/tools.md §2.2).
func (c *Config) check(set map[string]bool) error {
	isSet := func(short, long string) bool { return set[short] || set[long] }
	t := c.Test
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("invalid port %d", c.Port)
	case c.IBPort != 1:
		return fmt.Errorf("IB port %d: goverbs devices have one port, 1", c.IBPort)
	case c.Iters < minIters || c.Iters > maxIters:
		return fmt.Errorf("Iteration num should be between %d and %d", minIters, maxIters)
	case c.TxDepth < 1 || c.TxDepth > maxTxDepth:
		return fmt.Errorf("Tx depth should be between 1 and %d", maxTxDepth)
	case c.RxDepth < 1 || c.RxDepth > maxRxDepth:
		return fmt.Errorf("Rx depth should be between 1 and %d", maxRxDepth)
	case t.Verb != Send && c.RxDepth > 1:
		return errors.New("On RDMA verbs rx depth can be only 1")
	case c.CQMod < 1 || c.CQMod > maxCQMod:
		return fmt.Errorf("CQ moderation should be between 1 and %d", maxCQMod)
	case c.Inline < 0 || c.Inline > maxInline:
		return fmt.Errorf("Max inline should be between 0 and %d", maxInline)
	case c.Inline > 0 && t.Verb.readLike():
		return errors.New("Inline feature not available on READ/Atomic verbs")
	case isSet("o", "outs") && !t.Verb.readLike():
		return errors.New("Setting Outstanding reads only available on READ verb")
	case isSet("A", "atomic_type") && t.Verb != Atomic:
		return errors.New("You are not running the atomic_lat/bw test! To change the atomic action type, you must run one of the atomic tests")
	case c.Duration < 0:
		return errors.New("Duration period must be positive")
	case c.GIDIdx < -1 || c.GIDIdx > maxGIDIdx:
		return fmt.Errorf("Gid index should be between 0 and %d", maxGIDIdx)
	case c.Timeout < 0 || c.Timeout > 31:
		return fmt.Errorf("QP Timeout %d: should be between 0 and 31", c.Timeout)
	case c.SL < 0 || c.SL > 15:
		return errors.New("Only 15 Service levels")
	case c.Events && t.Verb == Write:
		return errors.New("Events feature not available on WRITE verb")
	case isSet("q", "qp") && t.Lat:
		return errors.New("Multiple QPs only available on bw tests")
	case c.Duplex && t.Lat:
		return errors.New("Bidirectional is only available in BW test")
	case c.QPs < 1 || c.QPs > maxQPs:
		return fmt.Errorf("num of Qps should be between 1 and %d", maxQPs)
	}
	if c.MTU != 0 {
		if _, ok := verbs.MTUFromBytes(c.MTU); !ok {
			return fmt.Errorf("Invalid MTU - %d: choose from {256,512,1024,2048,4096}", c.MTU)
		}
	}
	if c.Addr != "" {
		if _, err := verbs.ParseAddr(c.Addr); err != nil {
			return err
		}
	}
	if t.Verb == Atomic && (c.Size != 8 || c.All) {
		return errors.New("Message size cannot be changed for Atomic tests")
	}
	if c.Duration > 0 {
		if c.All {
			return errors.New("Duration mode currently doesn't support running on all sizes.")
		}
		if c.Margin < 0 {
			c.Margin = c.Duration / 4
		}
		if c.Duration <= 2*c.Margin {
			return errors.New("please check that DURATION > 2*MARGIN")
		}
		c.NoPeak = true
	} else {
		c.TxDepth = min(c.TxDepth, c.Iters)
		if t.Verb == Send {
			c.RxDepth = min(c.RxDepth, c.Iters)
		}
		if c.Conn != verbs.QPTypeRC && c.RxDepth == defRxDepth {
			c.RxDepth = min(c.Iters, unackedMaxRx)
		}
		if !t.Lat && c.Iters*c.QPs > noPeakIters {
			c.NoPeak = true
		}
	}
	if c.All {
		c.Size = maxSize
	} else if c.Size > cqModLimit && !isSet("Q", "cq-mod") && c.Conn != verbs.QPTypeUD {
		c.CQMod = 1 // (not for UD, whose size comes down to the MTU later)
	}
	c.CQMod = min(c.CQMod, c.TxDepth)
	if t.Verb == Send && c.RxDepth%2 == 1 && !c.All {
		c.RxDepth++ // perftest's workaround for odd receive depths
	}
	if t.Verb == Send && !t.Lat && !c.client() && !c.Duplex {
		c.NoPeak = true // the receiver only knows when its first message came
	}
	return nil
}

// sizeValue is toolflag's size option for -s, in perftest's range, with
// its messages.
type sizeValue struct{ toolflag.Size }

func (v sizeValue) Set(s string) error {
	n, err := toolflag.ParseSize(s)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("Message Size should be a number, with K or M after it for KiB or MiB")
	}
	if err != nil || n < 1 || n > maxSize {
		return fmt.Errorf("Message Size should be between 1 and %d", maxSize)
	}
	*v.P = int(n)
	return nil
}

// atomicValue parses -A.
type atomicValue struct{ p *AtomicType }

func (v atomicValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

func (v atomicValue) Set(s string) error {
	switch s {
	case "CMP_AND_SWAP":
		*v.p = CmpAndSwap
	case "FETCH_AND_ADD":
		*v.p = FetchAndAdd
	default:
		return errors.New("Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}")
	}
	return nil
}

// stderr is where notes go: Stderr, or nowhere.
func (c *Config) stderr() io.Writer {
	if c.Stderr == nil {
		return io.Discard
	}
	return c.Stderr
}
