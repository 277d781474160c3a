// Command goverbs is the goverbs command-line tool.
//
//	goverbs demo            run every RC operation between two devices on loopback UDP
//	goverbs codec           show a RoCEv2 exchange built and checked by the codec
//	goverbs decode FILE     decode the RoCEv2 frames of a pcap file
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "goverbs:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usage = `usage: goverbs <command> [arguments]

commands:
  demo            run SEND, RDMA WRITE (with and without immediate), RDMA READ and both
                  atomics between two devices on loopback UDP, verify the data, report speed
  codec           build an RC SEND and its ACK with the RoCEv2 codec, print and verify them
  decode FILE     decode the RoCEv2 frames (UDP port 4791) of a pcap file and check their ICRCs
  help            show this text
`

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "demo":
		if len(rest) != 0 {
			return fmt.Errorf("%w: demo takes no arguments", errUsage)
		}
		return demo(stdout, defaultDemo)
	case "codec":
		if len(rest) != 0 {
			return fmt.Errorf("%w: codec takes no arguments", errUsage)
		}
		return codecDemo(stdout)
	case "decode":
		if len(rest) != 1 {
			return fmt.Errorf("%w: decode FILE", errUsage)
		}
		return decodeFile(rest[0], stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stdout, usage)
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
}
