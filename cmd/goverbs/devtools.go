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

func (f *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "d", "goverbs0", "use device `NAME`")
	fs.StringVar(&f.name, "ib-dev", "goverbs0", "use device `NAME`")
	fs.StringVar(&f.addr, "addr", "127.0.0.1", "goverbs: the device's IP `address`")
	fs.IntVar(&f.linkMTU, "link-mtu", 0, "goverbs: MTU of the link under the device (0: the MTU of the interface with the address, as rxe)")
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

// parse parses args and turns flag errors into usage errors (those of
// the flag package marked as printed already).
func parse(fs *flag.FlagSet, args []string) error {
	err := toolflag.Shown(fs.Parse(args))
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

func ibvDevinfo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ibv_devinfo", stderr)
	var df deviceFlags
	df.register(fs)
	port := fs.Int("i", 0, "use `port` of the device (default all ports)")
	fs.IntVar(port, "ib-port", 0, "use `port` of the device (default all ports)")
	list := fs.Bool("l", false, "print only the device names")
	fs.BoolVar(list, "list", false, "print only the device names")
	verbose := fs.Bool("v", false, "print all the attributes of the device")
	fs.BoolVar(verbose, "verbose", false, "print all the attributes of the device")
	if err := parse(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if *port < 0 {
		return fmt.Errorf("%w: invalid port %d", errUsage, *port)
	}
	d, err := df.open()
	if err != nil {
		return err
	}
	defer d.Close()
	if *list {
		fmt.Fprintf(stdout, "1 HCA found:\n\t%s\n\n", d.Name())
		return nil
	}
	return devinfo.DevInfo(stdout, d, *port, *verbose)
}

func ibvDevices(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ibv_devices", stderr)
	var df deviceFlags
	df.register(fs)
	if err := parse(fs, args); err != nil {
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

func ignoreHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
