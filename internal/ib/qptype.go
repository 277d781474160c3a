package ib

// QPType is the transport service of a queue pair (enum ibv_qp_type;
// IBA 9.7 and 9.8, doc/protocol.md §3.2). Only the three RoCEv2 data services exist here.
type QPType uint8

// QP types, with their libibverbs values.
const (
	QPTypeRC QPType = 2 // IBV_QPT_RC, reliable connected
	QPTypeUC QPType = 3 // IBV_QPT_UC, unreliable connected
	QPTypeUD QPType = 4 // IBV_QPT_UD, unreliable datagram
)

var qpTypeNames = [...]string{
	QPTypeRC: "RC",
	QPTypeUC: "UC",
	QPTypeUD: "UD",
}

// String returns "RC", "UC" or "UD", or "QPType(n)".
func (t QPType) String() string { return enumString(qpTypeNames[:], uint8(t), "QPType") }
