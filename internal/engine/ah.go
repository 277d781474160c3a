package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/wire"
)

// AH is an address handle (struct ibv_ah): the path of UD sends, named by
// each work request. It does not change once made; Close only keeps new
// work requests from naming it, and those already posted still go.
type AH struct {
	pd     uint32
	attr   AHAttr
	dest   netip.AddrPort // where its packets go
	env    wire.Envelope  // their envelope, which the ICRC covers
	closed atomic.Bool
}

// ErrInvalidAH refuses a UD send without an open address handle of the
// QP's protection domain.
var ErrInvalidAH = errors.New("UD send needs an open address handle of the QP's protection domain")

// CreateAH makes an address handle of protection domain pd for a
// (ibv_create_ah).
func (d *Device) CreateAH(pd uint32, a *AHAttr) (*AH, error) {
	if err := d.checkAV(a); err != nil {
		return nil, err
	}
	ah := &AH{pd: pd, attr: *a}
	ah.dest, ah.env = d.route(a)
	return ah, nil
}

// Attr returns the attributes the AH was made with (ibv_query_ah).
func (ah *AH) Attr() AHAttr { return ah.attr }

// Close keeps later work requests from naming the AH (ibv_destroy_ah).
func (ah *AH) Close() { ah.closed.Store(true) }

// checkAV validates an address vector, of a connected QP's RTR or of an
// AH: RoCE needs the GRH (doc/protocol.md §1.3), the device has one GID,
// index 0, and one port; multicast is not supported.
func (d *Device) checkAV(a *AHAttr) error {
	bad := func(what string, v any) error { return fmt.Errorf("%w: %s %v", ErrInvalidArgument, what, v) }
	dst := a.DGID.Addr().Unmap()
	switch {
	case !a.IsGlobal:
		return fmt.Errorf("%w: address vector without a GRH (RoCE needs one, with the peer's GID: IsGlobal)", ErrInvalidArgument)
	case a.DGID.IsZero():
		return fmt.Errorf("%w: address vector without the peer's GID (DGID is zero: a zero Endpoint?)", ErrInvalidArgument)
	case a.SGIDIndex != 0:
		return bad("SGID index (the device has one GID, index 0)", a.SGIDIndex)
	case a.PortNum > 1:
		return bad("port", a.PortNum)
	case dst.Is4() != d.local.Addr().Is4():
		return bad("destination GID family differs from the device's", a.DGID)
	case dst.IsMulticast():
		return bad("destination GID (multicast is not supported)", a.DGID)
	}
	return nil
}

// route returns where packets for address vector a go and their
// envelope, prepared: the GID's IP address, on the port a names or 4791.
func (d *Device) route(a *AHAttr) (netip.AddrPort, wire.Envelope) {
	port := a.DestPort
	if port == 0 {
		port = wire.UDPPort
	}
	dst := netip.AddrPortFrom(a.DGID.Addr().Unmap(), port)
	return dst, envelope(d.local, dst)
}

// openFlow has the link open a flow to dst for a connected QP's packets
// (conn.FlowOpener: a socket connected to the peer, which spares the
// kernel a route lookup per send) and returns it with the source address
// its packets carry; flow 0 if there is none, and then the packets go
// from the device's address.
func (d *Device) openFlow(dst netip.AddrPort) (flow int, src netip.AddrPort) {
	if d.flows == nil {
		return 0, d.local
	}
	flow, src = d.flows.OpenFlow(dst)
	if flow == 0 || src.Addr() != d.local.Addr() {
		return 0, d.local // a device that names an address of its own keeps it
	}
	return flow, src
}

// recheckFlow has the link learn flow's IPv4 ID count again before the
// flow's next send (conn.FlowOpener.RecheckFlow). A count gone wrong
// loses every packet to a peer that checks the ICRC with the ID on the
// wire, and all a QP sees of that is what it sees of loss: a local ACK
// timeout (the requester), a request repeated (the responder). Each
// calls it, so that the retransmission, or the answer repeated, carries
// the right ID.
func (d *Device) recheckFlow(flow int) {
	if flow != 0 {
		d.flows.RecheckFlow(flow)
	}
}

// envelope returns the envelope, prepared, of a datagram from src to dst,
// sent with DF as the UDP link sends (doc/design.md §3).
func envelope(src, dst netip.AddrPort) wire.Envelope {
	env := wire.Envelope{
		Src: src.Addr(), Dst: dst.Addr(),
		FlagsFragment: wire.FlagDontFragment,
		SrcPort:       src.Port(), DstPort: dst.Port(),
	}
	env.Prepare()
	return env
}
