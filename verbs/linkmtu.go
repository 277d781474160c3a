package verbs

import (
	"net"
	"net/netip"
)

// interfaceMTU returns the MTU of the network interface that holds
// address a, as rxe takes its port's MTU from its net device's: the link
// a device on that address sends over. ok is false when no interface has
// the address (an unspecified one, say) or the interfaces cannot be read.
func interfaceMTU(a netip.Addr) (mtu int, ok bool) {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0, false
	}
	a = a.Unmap()
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, x := range addrs {
			if p, ok := x.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(p.IP); ok && ip.Unmap() == a {
					return ifc.MTU, true
				}
			}
		}
	}
	return 0, false
}

// defaultLinkMTU is the link MTU of a device whose DeviceConfig.LinkMTU is
// zero, bound at local: the MTU of the interface holding the address, or,
// without one, 1500 (Ethernet's) off loopback and 4176 (active MTU 4096)
// on it and on links other than a UDP socket.
func defaultLinkMTU(local netip.Addr, udp bool) int {
	if !udp {
		return 4096 + 80
	}
	if mtu, ok := interfaceMTU(local); ok {
		return mtu
	}
	if local.IsLoopback() {
		return 4096 + 80
	}
	return 1500
}
