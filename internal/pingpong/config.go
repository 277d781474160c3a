package pingpong

import (
	"flag"
	"fmt"
	"io"

	"github.com/goverbs/goverbs/verbs"
)

// Config holds ibv_rc_pingpong's options (CONNECT.md §1.1) plus goverbs'
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
	// Server is the host to connect to; empty means run as the server.
	Server string
	// Addr is the device's RoCE address: an IP with optional :port. Zero
	// means the local address of the TCP connection, on port 4791.
	Addr string
}

// ParseArgs parses the command line like rc_pingpong; errors and usage go
// to stderr.
func ParseArgs(prog string, args []string, stderr io.Writer) (Config, error) {
	c := Config{Port: 18515, IBPort: 1, Size: 4096, MTU: 1024, RxDepth: 500, Iters: 1000, GIDIdx: -1}
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	both := func(short, long string, p any, usage string) {
		switch v := p.(type) {
		case *int:
			fs.IntVar(v, short, *v, usage)
			fs.IntVar(v, long, *v, usage)
		case *string:
			fs.StringVar(v, short, *v, usage)
			fs.StringVar(v, long, *v, usage)
		case *bool:
			fs.BoolVar(v, short, *v, usage)
			fs.BoolVar(v, long, *v, usage)
		}
	}
	both("p", "port", &c.Port, "listen on/connect to port `N` (default 18515)")
	both("d", "ib-dev", &c.IBDev, "use IB device `NAME` (default goverbs0)")
	both("i", "ib-port", &c.IBPort, "use port `N` of IB device (default 1)")
	both("s", "size", &c.Size, "size of message to exchange (default 4096)")
	both("m", "mtu", &c.MTU, "path MTU (default 1024)")
	both("r", "rx-depth", &c.RxDepth, "number of receives to post at a time (default 500)")
	both("n", "iters", &c.Iters, "number of exchanges (default 1000)")
	both("l", "sl", &c.SL, "service level value")
	both("e", "events", &c.Events, "sleep on CQ events (default poll)")
	both("g", "gid-idx", &c.GIDIdx, "local port gid index")
	both("c", "chk", &c.Check, "validate received buffer")
	fs.StringVar(&c.Addr, "addr", "", "goverbs: RoCE `IP[:port]` of this device (default: the TCP connection's local address, port 4791)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  %s            start a server and wait for connection\n  %s <host>     connect to server at <host>\n\nOptions:\n", prog, prog)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch fs.NArg() {
	case 0:
	case 1:
		c.Server = fs.Arg(0)
	default:
		fs.Usage()
		return c, fmt.Errorf("too many arguments")
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
	if c.Size < 1 || c.RxDepth < 1 || c.Iters < 1 {
		return c, fmt.Errorf("size, rx-depth and iters must be positive")
	}
	if c.Addr != "" {
		if _, err := verbs.ParseAddr(c.Addr); err != nil {
			return c, err
		}
	}
	return c, nil
}
