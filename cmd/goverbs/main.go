// Command goverbs is the goverbs command-line tool.
//
//	goverbs demo            run every RC operation between two devices on loopback UDP
//	goverbs codec           show a RoCEv2 exchange built and checked by the codec
//	goverbs decode FILE     decode the RoCEv2 frames of a pcap or pcapng file
//	goverbs ibv_rc_pingpong | ibv_uc_pingpong | ibv_ud_pingpong [options] [host]
//	goverbs ibv_srq_pingpong [options] [host]
//	goverbs ibv_devinfo | ibv_devices [options]
//	goverbs ib_write_bw | ib_write_lat | ib_read_bw | ib_read_lat |
//	        ib_send_bw | ib_send_lat | ib_atomic_bw | ib_atomic_lat [options] [host]
//
// Subcommands named after the rdma-core tools take the same options and
// print the same output; a link to the binary with the tool's name (for
// example ibv_rc_pingpong -> goverbs) runs that subcommand directly.
//
// GOVERBS_CPUPROFILE=FILE in the environment writes a CPU profile of the
// whole command to FILE (go tool pprof reads it), so the perftest tools
// can be profiled as they run against a peer.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/goverbs/goverbs/internal/devinfo"
	"github.com/goverbs/goverbs/internal/perftest"
	"github.com/goverbs/goverbs/internal/pingpong"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"
)

func main() {
	args := os.Args[1:]
	if name := filepath.Base(os.Args[0]); tools[name] != nil {
		args = append([]string{name}, args...)
	}
	stop, err := startProfile(os.Getenv("GOVERBS_CPUPROFILE"))
	if err == nil {
		err = run(args, os.Stdout, os.Stderr)
		stop()
	}
	if err != nil {
		var shown *toolflag.ShownError
		if !errors.As(err, &shown) {
			fmt.Fprintln(os.Stderr, "goverbs:", err)
		}
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// startProfile starts a CPU profile into path, if path is not empty, and
// returns what stops it and closes the file.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("GOVERBS_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("GOVERBS_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// tools are the subcommands that stand in for rdma-core and perftest tools.
var tools = map[string]func(args []string, stdout, stderr io.Writer) error{
	"ibv_rc_pingpong":  pingpongTool("ibv_rc_pingpong", pingpong.Run),
	"ibv_uc_pingpong":  pingpongTool(pingpong.UCProg, pingpong.Run),
	"ibv_ud_pingpong":  pingpongTool(pingpong.UDProg, pingpong.Run),
	"ibv_srq_pingpong": pingpongTool(pingpong.SRQProg, pingpong.RunSRQ),
	"ibv_devinfo":      ibvDevinfo,
	"ibv_devices":      ibvDevices,
}

func init() {
	for name := range perftest.Tests {
		tools[name] = func(args []string, stdout, stderr io.Writer) error {
			return perftestTool(name, args, stdout, stderr)
		}
	}
}

func perftestTool(name string, args []string, stdout, stderr io.Writer) error {
	cfg, err := perftest.ParseArgs(name, args, stderr)
	if err != nil {
		return ignoreHelp(usageErr(err, nil))
	}
	cfg.Stats = statsAtExit(cfg.Counters, stderr)
	return perftest.Run(cfg, stdout)
}

// pingpongTool is the subcommand of rdma-core's ping-pong prog, which run
// performs.
func pingpongTool(prog string, run func(pingpong.Config, io.Writer) error) func(args []string, stdout, stderr io.Writer) error {
	return func(args []string, stdout, stderr io.Writer) error {
		cfg, err := pingpong.ParseArgs(prog, args, stderr)
		if err != nil {
			return ignoreHelp(usageErr(err, nil))
		}
		cfg.Stats = statsAtExit(cfg.PrintStats, stderr)
		return run(cfg, stdout)
	}
}

// statsAtExit returns what prints a tool's device counters when it ends,
// in the form of `rdma statistic show link`, if the tool was given
// --stats or GOVERBS_COUNTERS=1 is set; nil otherwise.
func statsAtExit(asked bool, stderr io.Writer) func(*verbs.Device) {
	if !asked && os.Getenv("GOVERBS_COUNTERS") != "1" {
		return nil
	}
	return func(d *verbs.Device) { devinfo.Stat(stderr, d) }
}

const usage = `usage: goverbs <command> [arguments]

commands:
  demo [-s SIZE] [-n ITERS] [-pcap FILE] [-stats]
                  run SEND, RDMA WRITE (with and without immediate), RDMA READ and both
                  atomics between two devices on loopback UDP, verify the data, report speed;
                  -pcap writes the first device's packets for Wireshark, -stats prints the
                  devices' counters
  codec           build an RC SEND and its ACK with the RoCEv2 codec, print and verify them
  decode [-all-ports] FILE
                  decode the RoCEv2 frames (UDP port 4791, or any) of a pcap or pcapng file, check ICRCs
  ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong [options] [host]
                  RC, UC or UD ping-pong with the options, exchange and output of
                  rdma-core's tools
  ibv_srq_pingpong [options] [host]
                  the same on -q QPs (default 16) receiving through one shared receive queue
  ib_write_bw, ib_write_lat, ib_read_bw, ib_read_lat, ib_send_bw, ib_send_lat,
  ib_atomic_bw, ib_atomic_lat [options] [host]
                  perftest's bandwidth and latency tests, with its options, exchange and
                  output; -h lists the options
  ibv_devinfo [-d NAME] [-i PORT] [-l] [--addr IP] [--link-mtu N]
  ibv_devices [--addr IP]
                  describe the goverbs device on IP as rdma-core's tools describe theirs
  help [COMMAND]  show this text, or the options of COMMAND
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage) // as go(1) with no command: the usage is the message
		return &toolflag.ShownError{Err: errUsage}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "demo":
		return demoCmd(rest, stdout, stderr)
	case "codec":
		fs := newFlagSet("codec", stderr)
		fs.Usage = func() {
			fmt.Fprintln(stderr, "usage: goverbs codec\n  build an RC SEND and its ACK with the RoCEv2 codec, print and verify them")
		}
		if err := parse(fs, rest); err != nil {
			return ignoreHelp(err)
		}
		return codecDemo(stdout)
	case "decode":
		fs := newFlagSet("decode", stderr)
		fs.Usage = func() {
			fmt.Fprintln(stderr, "usage: goverbs decode [-all-ports] FILE")
			fs.PrintDefaults()
		}
		all := fs.Bool("all-ports", false, "decode UDP datagrams to every port, not only 4791")
		if err := usageErr(toolflag.Shown(fs.Parse(rest)), nil); err != nil {
			return ignoreHelp(err)
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: decode [-all-ports] FILE", errUsage)
		}
		return decodeFile(fs.Arg(0), *all, stdout)
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage)
			return nil
		}
		if !isCommand(rest[0]) || rest[0] == "help" || len(rest) > 1 {
			return fmt.Errorf("%w: help takes one command: %s (goverbs help lists them)", errUsage, strings.Join(rest, " "))
		}
		return run([]string{rest[0], "-h"}, stdout, stderr)
	default:
		if tool := tools[cmd]; tool != nil {
			return tool(rest, stdout, stderr)
		}
		return fmt.Errorf("%w: unknown command %q (goverbs help lists the commands)", errUsage, cmd)
	}
}

// isCommand reports whether run knows the command name.
func isCommand(name string) bool {
	switch name {
	case "demo", "codec", "decode", "help":
		return true
	}
	return tools[name] != nil
}
