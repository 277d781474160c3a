package verbs

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// DeviceAttr are device capabilities (a subset of struct ibv_device_attr).
type DeviceAttr struct {
	FWVer           string
	NodeGUID        uint64
	SysImageGUID    uint64
	MaxMRSize       uint64
	PageSizeCap     uint64
	VendorID        uint32
	VendorPartID    uint32
	HWVer           uint32
	MaxQP           int
	MaxQPWR         int
	MaxSGE          int
	MaxCQ           int
	MaxCQE          int
	MaxMR           int
	MaxPD           int
	MaxQPRdAtom     int
	MaxQPInitRdAtom int
	MaxInlineData   int
	AtomicCapHCA    bool
	PhysPortCnt     int
	LocalCAAckDelay uint8
	MaxMessageSize  uint64
}

// PortState is a port state (enum ibv_port_state).
type PortState uint8

// Port states.
const (
	PortDown   PortState = 1
	PortActive PortState = 4
)

func (s PortState) String() string {
	switch s {
	case PortDown:
		return "PORT_DOWN"
	case PortActive:
		return "PORT_ACTIVE"
	}
	return fmt.Sprintf("PORT_STATE_%d", uint8(s))
}

// PortAttr are port attributes (a subset of struct ibv_port_attr).
type PortAttr struct {
	State       PortState
	MaxMTU      MTU
	ActiveMTU   MTU
	GIDTblLen   int
	PKeyTblLen  int
	MaxMsgSz    uint64
	LinkLayer   string // "Ethernet"
	ActiveSpeed string
}

// Query returns the device attributes (ibv_query_device).
func (d *Device) Query() DeviceAttr {
	guid := d.guid()
	return DeviceAttr{
		FWVer: "0.0.0", NodeGUID: guid, SysImageGUID: guid,
		MaxMRSize: ^uint64(0), PageSizeCap: 0xfffff000, VendorID: 0xffffff,
		MaxQP: engine.MaxQP, MaxQPWR: engine.MaxQPWR, MaxSGE: engine.MaxSGE,
		MaxCQ: engine.MaxQP, MaxCQE: engine.MaxCQE, MaxMR: engine.MaxMR, MaxPD: engine.MaxQP,
		MaxQPRdAtom: engine.MaxQPRdAtomic, MaxQPInitRdAtom: engine.MaxQPRdAtomic,
		MaxInlineData: engine.MaxInlineData, AtomicCapHCA: true, PhysPortCnt: 1,
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
// (ibv_query_port).
func (d *Device) QueryPort(port uint8) (PortAttr, error) {
	if port != 1 {
		return PortAttr{}, fmt.Errorf("query port %d: %w (the device has port 1)", port, ErrInvalidArgument)
	}
	return PortAttr{
		State: PortActive, MaxMTU: ib.MTU4096, ActiveMTU: d.e.ActiveMTU(),
		GIDTblLen: 1, PKeyTblLen: 1, MaxMsgSz: engine.MaxMsgSize, LinkLayer: "Ethernet",
	}, nil
}

// QueryGID returns the GID at index of port 1's GID table (ibv_query_gid).
// The table holds one RoCEv2 GID, the device's IP address.
func (d *Device) QueryGID(port uint8, index int) (GID, error) {
	if port != 1 || index != 0 {
		return GID{}, fmt.Errorf("query GID port %d index %d: %w", port, index, ErrInvalidArgument)
	}
	return d.e.GID(), nil
}
