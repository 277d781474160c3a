package pingpong

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/internal/oob"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"
)

// Config holds ibv_rc_pingpong's options (doc/tools.md §1.1) plus goverbs'
// RoCE address.
type Config struct {
	Port    int    // -p: TCP port
	IBDev   string // -d: device name (the goverbs device gets this name)
	IBPort  int    // -i: device port, must be 1
	Size    int    // -s: message size
	MTU     int    // -m: path MTU in bytes
	RxDepth int    // -r: receives posted at a time
	Iters   int    // -n: exchanges
	SL      int    // -l: service level (not on the RoCE wire)
	Events  bool   // -e: sleep on CQ events instead of polling
	GIDIdx  int    // -g: local GID index; goverbs devices have one GID, index 0 (-1: that one)
	Check   bool   // -c: validate the buffer at the end
	// PrintStats (--stats, goverbs) asks for the device's counters at exit.
	PrintStats bool
	// Stats, if set, sees the device at the end of the run, successful or
	// not, before it closes (the tool prints its counters there).
	Stats func(*verbs.Device)
	NumQP int // -q: QPs sharing the SRQ (ibv_srq_pingpong only)
	// Type is the QP type the tool's name implies: RC (or zero), UC for
	// ibv_uc_pingpong, UD for ibv_ud_pingpong.
	Type verbs.QPType
	// Server is the host to connect to; empty means run as the server.
	Server string
	// Addr is the device's RoCE address: an IP with optional :port. Zero
	// means the local address of the TCP connection, on port 4791.
	Addr string
}

// The names of rdma-core's UC and UD ping-pongs, whose options and QPs
// ParseArgs then takes (doc/tools.md §1.6, §1.7).
const (
	UCProg = "ibv_uc_pingpong"
	UDProg = "ibv_ud_pingpong"
)

// ParseArgs parses the command line like rc_pingpong, uc_pingpong,
// ud_pingpong or srq_pingpong by prog; errors and usage go to stderr.
func ParseArgs(prog string, args []string, stderr io.Writer) (Config, error) {
	c := Config{Port: 18515, IBPort: 1, Size: 4096, MTU: 1024, RxDepth: 500, Iters: 1000, GIDIdx: -1, Type: verbs.QPTypeRC}
	switch prog {
	case UCProg:
		c.Type = verbs.QPTypeUC
	case UDProg:
		c.Type, c.Size = verbs.QPTypeUD, 1024 // one packet of rxe's usual MTU
	}
	opts := []toolflag.Option{
		toolflag.Opt("p", "port", "port", "listen on/connect to port <port> (default 18515)", &c.Port),
		toolflag.Opt("d", "ib-dev", "dev", "name of the goverbs device (default goverbs0)", &c.IBDev),
		toolflag.Opt("i", "ib-port", "port", "port of the device (only 1)", &c.IBPort),
		toolflag.Opt("s", "size", "size", fmt.Sprintf("size of message to exchange (default %d)", c.Size), &c.Size),
	}
	if c.Type != verbs.QPTypeUD { // a UD message is one packet of the port's MTU
		opts = append(opts, toolflag.Opt("m", "mtu", "size", "path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)", &c.MTU))
	}
	opts = append(opts,
		toolflag.Opt("r", "rx-depth", "dep", "number of receives to post at a time (default 500)", &c.RxDepth),
		toolflag.Opt("n", "iters", "iters", "number of exchanges (default 1000)", &c.Iters),
		toolflag.Opt("l", "sl", "sl", "service level value", &c.SL),
		toolflag.Opt("e", "events", "", "sleep on CQ events (default poll)", &c.Events),
		toolflag.Opt("g", "gid-idx", "gid index", "local port gid index (goverbs devices have one GID, index 0)", &c.GIDIdx),
		toolflag.Opt("c", "chk", "", "validate received buffer", &c.Check),
		toolflag.Opt("", "stats", "", "goverbs: print the device's counters to stderr at exit, as `rdma statistic` does", &c.PrintStats),
		toolflag.Opt("", "addr", "ip[:port]", "goverbs: RoCE address of this device (default: the TCP connection's local address, port 4791)", &c.Addr),
	)
	if prog == SRQProg {
		opts = append(opts, srqOptions(&c)...)
	}
	fs := toolflag.New(prog, stderr, opts)
	hosts, _, err := fs.Parse(args)
	if err != nil {
		return c, err
	}
	if c.Server, err = oob.ServerHost(hosts); err != nil {
		return c, err
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("invalid port %d", c.Port)
	}
	if c.IBPort < 1 {
		return c, fmt.Errorf("invalid IB port %d", c.IBPort)
	}
	if _, ok := verbs.MTUFromBytes(c.MTU); !ok {
		return c, fmt.Errorf("invalid MTU %d (256, 512, 1024, 2048 or 4096)", c.MTU)
	}
	for _, v := range []struct {
		opt string
		n   int
	}{{"-s/--size", c.Size}, {"-r/--rx-depth", c.RxDepth}, {"-n/--iters", c.Iters}} {
		if v.n < 1 {
			return c, fmt.Errorf("%s %d: must be positive", v.opt, v.n)
		}
	}
	if c.Addr != "" {
		if _, err := verbs.ParseAddr(c.Addr); err != nil {
			return c, err
		}
	}
	if prog == SRQProg {
		return c, checkSRQ(&c)
	}
	return c, nil
}

// qpType is the QP type to create: Type, RC for zero.
func (c *Config) qpType() verbs.QPType {
	if c.Type == 0 {
		return verbs.QPTypeRC
	}
	return c.Type
}
