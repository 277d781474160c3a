package verbs

import (
	"unsafe"

	"github.com/goverbs/goverbs/internal/engine"
)

// AH is an address handle (struct ibv_ah): where the UD sends that name
// it in SendWR.AH go. PD.CreateAH makes one.
type AH struct {
	// e comes first: a SendWR hands the engine a *AH as a **engine.AH
	// (convert_unsafe.go, checked by TestLayout).
	e  *engine.AH
	pd *PD

	closed bool // guarded by pd.dev.mu
}

// CreateAH creates an address handle for attr (ibv_create_ah): IsGlobal
// set, DGID the destination's GID (its IP address, of the device's
// family), SGIDIndex 0 and, for a device on another port than 4791,
// DestPort. HopLimit, TrafficClass, FlowLabel and SL are kept (AH.Attr)
// but have no effect: the kernel sets the IP header of what goverbs sends.
// Multicast GIDs are not supported.
func (pd *PD) CreateAH(attr *AHAttr) (*AH, error) {
	const verb = "create AH"
	if attr == nil {
		return nil, errorf(verb, "%w: no AHAttr", ErrInvalidArgument)
	}
	pd.dev.mu.Lock()
	defer pd.dev.mu.Unlock()
	if err := pd.usable(); err != nil {
		return nil, errorf(verb, "%w", err)
	}
	e, err := pd.dev.e.CreateAH(pd.id, (*engine.AHAttr)(unsafe.Pointer(attr)))
	if err != nil {
		return nil, errorf(verb, "%w", err)
	}
	pd.ahs++
	return &AH{e: e, pd: pd}, nil
}

// Attr returns the attributes the AH was created with (ibv_query_ah).
func (ah *AH) Attr() AHAttr {
	a := ah.e.Attr()
	return *(*AHAttr)(unsafe.Pointer(&a))
}

// Close destroys the address handle (ibv_destroy_ah). Sends posted before
// still go where it points; later ones naming it fail with ErrInvalidAH.
// Closing it again returns nil.
func (ah *AH) Close() error {
	dev := ah.pd.dev
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if ah.closed {
		return nil
	}
	ah.closed = true
	ah.e.Close()
	ah.pd.ahs--
	return nil
}
