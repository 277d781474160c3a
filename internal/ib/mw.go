package ib

// MWType is the type of a memory window (enum ibv_mw_type; IBA 10.6.7,
// doc/protocol.md §12.5). A type 1 window is bound with the Bind Memory
// Window verb (ibv_bind_mw) and stays usable through any QP of its PD; a
// type 2 window is bound with a BIND_MW work request and is then
// associated with the QP that bound it (type 2B).
type MWType uint8

// Memory window types, with their libibverbs values.
const (
	MWType1 MWType = 1 // IBV_MW_TYPE_1
	MWType2 MWType = 2 // IBV_MW_TYPE_2
)

var mwTypeNames = [...]string{
	MWType1: "IBV_MW_TYPE_1",
	MWType2: "IBV_MW_TYPE_2",
}

// String returns the libibverbs enum name ("IBV_MW_TYPE_2"), or "MWType(n)".
func (t MWType) String() string { return enumString(mwTypeNames[:], uint8(t), "MWType") }

// Valid reports whether t is a type a window can have.
func (t MWType) Valid() bool { return t == MWType1 || t == MWType2 }
