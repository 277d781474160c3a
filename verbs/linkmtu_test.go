package verbs

import (
	"net"
	"net/netip"
	"os/exec"
	"testing"
)

// TestInterfaceMTU: every address of every interface maps to that
// interface's MTU.
func TestInterfaceMTU(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, x := range addrs {
			p, ok := x.(*net.IPNet)
			if !ok {
				continue
			}
			a, _ := netip.AddrFromSlice(p.IP)
			if mtu, ok := interfaceMTU(a); !ok || mtu != ifc.MTU {
				t.Errorf("%v on %s (MTU %d): %d, %v", a, ifc.Name, ifc.MTU, mtu, ok)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no interface has an address (not even loopback)")
	}
	if _, ok := interfaceMTU(netip.MustParseAddr("192.0.2.77")); ok {
		t.Error("an address no interface has found an MTU")
	}
}

// TestActiveMTUFromInterface: a device on a 9000-byte link reports
// active_mtu 4096 and on a 1500-byte link 1024, as rxe does. It makes a
// veth interface, which needs CAP_NET_ADMIN in the test's network
// namespace (unshare -n gives it).
func TestActiveMTUFromInterface(t *testing.T) {
	if err := exec.Command("ip", "link", "add", "gvmtu0", "type", "veth", "peer", "name", "gvmtu1").Run(); err != nil {
		t.Skipf("cannot make a veth interface here (%v): run in a namespace of your own, unshare -rn", err)
	}
	defer exec.Command("ip", "link", "del", "gvmtu0").Run()
	for _, c := range []struct {
		mtu  string
		want MTU
	}{{"9000", MTU4096}, {"1500", MTU1024}, {"1100", MTU512}} {
		for _, args := range [][]string{
			{"link", "set", "gvmtu0", "mtu", c.mtu, "up"},
			{"addr", "replace", "192.0.2.77/32", "dev", "gvmtu0"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v %s", args, err, out)
			}
		}
		d, err := OpenDevice(DeviceConfig{Addr: netip.MustParseAddrPort("192.0.2.77:0")})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := d.QueryPort(1)
		d.Close()
		if p.ActiveMTU != c.want {
			t.Errorf("link MTU %s: active_mtu %v, want %v", c.mtu, p.ActiveMTU, c.want)
		}
	}
}
