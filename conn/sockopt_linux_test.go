package conn

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// The socket must send with DF set (so Linux writes IPv4 ID 0, which the
// ICRC covers) and have its buffers raised.
func TestUDPSocketOptions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		b          func(t *testing.T) *UDPBind
		level, opt int
		want       int
	}{
		{"IPv4 DF", func(t *testing.T) *UDPBind { return listen(t, loop4) }, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO},
		{"IPv6 DONTFRAG", func(t *testing.T) *UDPBind { return listen(t, loop6) }, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1},
		{"IPv4 ECT(0)", func(t *testing.T) *UDPBind { return listenECT(t, loop4) }, unix.IPPROTO_IP, unix.IP_TOS, int(ECNECT0)},
		{"IPv6 ECT(0)", func(t *testing.T) *UDPBind { return listenECT(t, loop6) }, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int(ECNECT0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b(t)
			got, err := unix.GetsockoptInt(b.sock.fd, tc.level, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			rcvbuf, _ := unix.GetsockoptInt(b.sock.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
			if got != tc.want {
				t.Errorf("option = %d, want %d", got, tc.want)
			}
			// Best effort: log rather than fail where the sysctl caps it.
			t.Logf("SO_RCVBUF = %d (asked %d; the kernel doubles it)", rcvbuf, socketBufferSize)
		})
	}
}

// listenECT is listen with SetECN(ECT(0)) done.
func listenECT(t *testing.T, addr netip.AddrPort) *UDPBind {
	b := listen(t, addr)
	if err := b.SetECN(ECNECT0); err != nil {
		t.Fatal(err)
	}
	return b
}
