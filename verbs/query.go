package verbs

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/engine"
)

// DeviceAttr are device capabilities (a subset of struct ibv_device_attr,
// same names), returned by Device.Query. The limits are enforced when
// objects are created and requests posted.
type DeviceAttr struct {
	FWVer           string // firmware version, "0.0.0"
	NodeGUID        uint64 // derived from the device's IP address, as rxe derives it from the MAC
	SysImageGUID    uint64 // the node GUID
	MaxMRSize       uint64 // largest memory region
	PageSizeCap     uint64 // supported page sizes
	VendorID        uint32 // IEEE vendor ID (0xffffff, as rxe)
	VendorPartID    uint32
	HWVer           uint32
	MaxQP           int  // QPs per device
	MaxQPWR         int  // QPCap.MaxSendWR and MaxRecvWR
	MaxSGE          int  // QPCap.MaxSendSGE and MaxRecvSGE
	MaxCQ           int  // CQs per device
	MaxCQE          int  // entries per CQ
	MaxMR           int  // memory regions per device
	MaxMW           int  // memory windows per device
	MaxPD           int  // PDs per device
	MaxQPRdAtom     int  // QPAttr.MaxDestRdAtomic
	MaxQPInitRdAtom int  // QPAttr.MaxRdAtomic
	MaxInlineData   int  // QPCap.MaxInlineData
	MaxSRQ          int  // SRQs per device
	MaxSRQWR        int  // SRQAttr.MaxWR
	MaxSRQSGE       int  // SRQAttr.MaxSGE
	AtomicCapHCA    bool // atomics are atomic with respect to this device's other accesses (IBV_ATOMIC_HCA)
	PhysPortCnt     int  // ports: 1
	LocalCAAckDelay uint8
	MaxMessageSize  uint64 // longest message (ibv_port_attr.max_msg_sz)
}

// PortState is a port state (enum ibv_port_state).
type PortState uint8

// Port states.
const (
	PortDown   PortState = 1 // IBV_PORT_DOWN
	PortActive PortState = 4 // IBV_PORT_ACTIVE
)

// String returns the libibverbs name without its prefix ("PORT_ACTIVE").
func (s PortState) String() string {
	switch s {
	case PortDown:
		return "PORT_DOWN"
	case PortActive:
		return "PORT_ACTIVE"
	}
	return fmt.Sprintf("PORT_STATE_%d", uint8(s))
}

// PortAttr are port attributes (a subset of struct ibv_port_attr, same
// names), returned by Device.QueryPort.
type PortAttr struct {
	State       PortState // PortActive, PortDown once the device is closed
	MaxMTU      MTU       // MTU4096
	ActiveMTU   MTU       // the largest QPAttr.PathMTU: DeviceConfig.LinkMTU − 80 rounded down, as rxe
	GIDTblLen   int       // GIDs: 1, the device's IP address
	PKeyTblLen  int       // P_Keys: 1, the default 0xFFFF
	MaxMsgSz    uint64    // longest message
	LinkLayer   string    // "Ethernet"
	ActiveSpeed string    // "" (a software device has no link speed)
	BadPKeyCntr uint16    // packets dropped for their P_Key (DropBadPKey), saturating as the IBA's 16-bit counter
}

// Query returns the device attributes (ibv_query_device).
func (d *Device) Query() DeviceAttr {
	guid := d.guid()
	return DeviceAttr{
		FWVer: "0.0.0", NodeGUID: guid, SysImageGUID: guid,
		MaxMRSize: ^uint64(0), PageSizeCap: 0xfffff000, VendorID: 0xffffff,
		MaxQP: engine.MaxQP, MaxQPWR: engine.MaxQPWR, MaxSGE: engine.MaxSGE,
		MaxCQ: engine.MaxQP, MaxCQE: engine.MaxCQE, MaxMR: engine.MaxMR, MaxMW: engine.MaxMW, MaxPD: engine.MaxQP,
		MaxQPRdAtom: engine.MaxQPRdAtomic, MaxQPInitRdAtom: engine.MaxQPRdAtomic,
		MaxInlineData: engine.MaxInlineData, AtomicCapHCA: true, PhysPortCnt: 1,
		MaxSRQ: engine.MaxSRQ, MaxSRQWR: engine.MaxQPWR, MaxSRQSGE: engine.MaxSGE,
		LocalCAAckDelay: 15, MaxMessageSize: engine.MaxMsgSize,
	}
}

// guid derives a stable 64-bit identity from the device's IP address, as
// rxe derives its GUID from the MAC address: locally administered, the
// same every time the device is opened on that address.
func (d *Device) guid() uint64 {
	b := d.e.LocalAddr().Addr().As16()
	g := uint64(0x02) << 56
	for _, x := range b {
		g = (g*131 + uint64(x)) & (1<<56 - 1)
	}
	return 0x02<<56 | g
}

// QueryPort returns the attributes of port 1, the only port
// (ibv_query_port). The port is down once the device is closed.
func (d *Device) QueryPort(port uint8) (PortAttr, error) {
	if port != 1 {
		return PortAttr{}, errorf("query port", "port %d: %w (the device has port 1)", port, ErrInvalidArgument)
	}
	state := PortActive
	if d.e.Closed() {
		state = PortDown
	}
	return PortAttr{
		State: state, MaxMTU: MTU4096, ActiveMTU: MTU(d.e.ActiveMTU()),
		GIDTblLen: 1, PKeyTblLen: 1, MaxMsgSz: engine.MaxMsgSize, LinkLayer: "Ethernet",
		BadPKeyCntr: uint16(min(d.Counters().Get(DropBadPKey), 0xffff)),
	}, nil
}

// QueryGID returns the GID at index of port 1's GID table (ibv_query_gid).
// The table holds one RoCEv2 GID, the device's IP address.
func (d *Device) QueryGID(port uint8, index int) (GID, error) {
	if port != 1 || index != 0 {
		return GID{}, errorf("query GID", "port %d index %d: %w (the device has port 1 with one GID, index 0)", port, index, ErrInvalidArgument)
	}
	return GID(d.e.GID()), nil
}
