package mem

import "strconv"

// Fault is the result of a checked access. The engine turns it into a NAK
// or a completion status (doc/protocol.md §12.3, §12.4); it is a small value, not
// an error, so the data path neither allocates nor compares interfaces.
type Fault uint8

// Faults in the order Table.Acquire checks them, which is rxe's order
// (doc/protocol.md §12.3 steps 8 and 9): the first failing check is reported.
const (
	FaultNone   Fault = iota // access allowed
	FaultBadKey              // no region with this key: bad index, tag mismatch, or deregistered
	FaultPD                  // region belongs to another protection domain
	FaultQP                  // a window's key used locally, or through another QP than the one it is bound to
	FaultAccess              // region lacks a needed access right
	FaultBounds              // [va, va+length) is not inside the region
)

var faultNames = [...]string{
	FaultNone:   "none",
	FaultBadKey: "bad key",
	FaultPD:     "PD mismatch",
	FaultQP:     "QP mismatch",
	FaultAccess: "access denied",
	FaultBounds: "out of bounds",
}

// String returns a short description of f.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "Fault(" + strconv.Itoa(int(f)) + ")"
}
