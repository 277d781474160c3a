package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"

	"github.com/goverbs/goverbs/internal/devinfo"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"
)

// deviceFlags are how the device tools learn which goverbs device to
// describe: a goverbs device is defined by its address and link MTU, and
// lives in the process that opens it.
type deviceFlags struct {
	name    string
	addr    string
	linkMTU int
}

// options are the tools' options of the device, in the words of
// rdma-core's, and goverbs' own.
func (f *deviceFlags) options() []toolflag.Option {
	f.name, f.addr = "goverbs0", "127.0.0.1"
	return []toolflag.Option{
		toolflag.Opt("d", "ib-dev", "dev", "use IB device <dev> (default goverbs0)", &f.name),
		toolflag.Opt("", "addr", "ip", "goverbs: the device's IP address (default 127.0.0.1)", &f.addr),
		toolflag.Opt("", "link-mtu", "mtu", "goverbs: MTU of the link under the device (default: the MTU of the interface with the address, as rxe)", &f.linkMTU),
	}
}

// parseDevTool parses the options of a device tool, which takes no
// operands.
func parseDevTool(prog, header string, opts []toolflag.Option, args []string, stderr io.Writer) error {
	fs := toolflag.New(prog, stderr, opts)
	fs.Header = header
	operands, _, err := fs.Parse(args)
	return usageErr(err, operands)
}

// open opens the device on an ephemeral UDP port: describing it must not
// take port 4791 from a running goverbs program.
func (f *deviceFlags) open() (*verbs.Device, error) {
	ip, err := netip.ParseAddr(f.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: --addr %q is not an IP address", errUsage, f.addr)
	}
	return verbs.OpenDevice(verbs.DeviceConfig{Name: f.name, Addr: netip.AddrPortFrom(ip, 0), LinkMTU: f.linkMTU})
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses args, which are to be options only, and turns flag errors
// into usage errors (those of the flag package marked as printed
// already).
func parse(fs *flag.FlagSet, args []string) error {
	return usageErr(toolflag.Shown(fs.Parse(args)), fs.Args())
}

// usageErr is a command's error for how its arguments parsed: err, or
// else an operand left over (extra), as a usage error; flag.ErrHelp (-h,
// the usage printed) stays itself, for ignoreHelp.
func usageErr(err error, extra []string) error {
	if err == nil && len(extra) > 0 {
		err = fmt.Errorf("unexpected argument %q", extra[0])
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

func ibvDevinfo(args []string, stdout, stderr io.Writer) error {
	var df deviceFlags
	var port int
	var list, verbose bool
	opts := append(df.options(),
		toolflag.Opt("i", "ib-port", "port", "use port <port> of IB device (default all ports)", &port),
		toolflag.Opt("l", "list", "", "print only the IB devices names", &list),
		toolflag.Opt("v", "verbose", "", "print all the attributes of the IB device(s)", &verbose))
	if err := parseDevTool("ibv_devinfo", "Usage: ibv_devinfo             print the ca attributes\n", opts, args, stderr); err != nil {
		return ignoreHelp(err)
	}
	if port < 0 {
		return fmt.Errorf("%w: invalid port %d", errUsage, port)
	}
	d, err := df.open()
	if err != nil {
		return err
	}
	defer d.Close()
	if list {
		fmt.Fprintf(stdout, "1 HCA found:\n\t%s\n\n", d.Name())
		return nil
	}
	return devinfo.DevInfo(stdout, d, port, verbose)
}

func ibvDevices(args []string, stdout, stderr io.Writer) error {
	var df deviceFlags
	if err := parseDevTool("ibv_devices", "Usage: ibv_devices             list the IB devices\n", df.options(), args, stderr); err != nil {
		return ignoreHelp(err)
	}
	d, err := df.open()
	if err != nil {
		return err
	}
	defer d.Close()
	devinfo.Devices(stdout, []*verbs.Device{d})
	return nil
}

// ignoreHelp turns the flag package's ErrHelp (-h: the usage is printed)
// into success.
func ignoreHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
