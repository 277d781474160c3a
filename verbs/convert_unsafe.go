package verbs

import (
	"unsafe"

	"github.com/goverbs/goverbs/internal/engine"
)

// The engine cannot import this package, so it keeps its own SGE, SendWR,
// RecvWR, WC and QPAttr, field for field the same as ours: same names,
// order and sizes, differing only in that its field types are those of
// internal/ib. The verbs pass pointers across as they are: posting a
// chain of any length and polling into the caller's slice then cost no
// copy and no allocation beyond the engine's own copy into its queue
// slots, and the engine still posts a chain under one lock. Copying field
// by field instead would need a scratch chain per post (an allocation, or
// a lock held across calls). TestLayout checks, type by type and field by
// field, that the two layouts are the same, so a field added to one side
// only fails the build's tests rather than corrupting memory.
//
// A SendWR's BindMW points at a verbs MW and MR; the engine reads them as
// the window and region they begin with (engine.BindMW), so MW and MR
// keep those as their first field, which TestLayout checks too.

func sendWR(wr *SendWR) *engine.SendWR { return (*engine.SendWR)(unsafe.Pointer(wr)) }

func recvWR(wr *RecvWR) *engine.RecvWR { return (*engine.RecvWR)(unsafe.Pointer(wr)) }

func engineWCs(wcs []WC) []engine.WC {
	return unsafe.Slice((*engine.WC)(unsafe.Pointer(unsafe.SliceData(wcs))), len(wcs))
}

func engineQPAttr(a *QPAttr) *engine.QPAttr { return (*engine.QPAttr)(unsafe.Pointer(a)) }

func fromEngineQPAttr(a *engine.QPAttr) *QPAttr { return (*QPAttr)(unsafe.Pointer(a)) }
