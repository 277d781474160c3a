package ib

import "strconv"

// MTU is an IB path MTU (enum ibv_mtu, doc/protocol.md §5.1): the most payload
// bytes one packet carries. Headers, pad and ICRC come on top.
type MTU uint8

// MTU values, with their libibverbs values.
const (
	MTU256  MTU = 1 // IBV_MTU_256
	MTU512  MTU = 2 // IBV_MTU_512
	MTU1024 MTU = 3 // IBV_MTU_1024
	MTU2048 MTU = 4 // IBV_MTU_2048
	MTU4096 MTU = 5 // IBV_MTU_4096
)

// rxeMaxHdrLength is RXE_MAX_HDR_LENGTH, the header budget rxe subtracts
// from the link MTU to get the active MTU (doc/protocol.md §5.1).
const rxeMaxHdrLength = 80

// Bytes returns the payload size m stands for (MTU1024 → 1024), or 0 when m
// is not one of the five values.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// String returns the size in bytes ("1024"), or "MTU(n)" for an invalid m.
func (m MTU) String() string {
	if n := m.Bytes(); n != 0 {
		return strconv.Itoa(n)
	}
	return "MTU(" + strconv.Itoa(int(m)) + ")"
}

// MTUFromBytes returns the MTU of exactly n bytes, and false when n is not
// 256, 512, 1024, 2048 or 4096.
func MTUFromBytes(n int) (MTU, bool) {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, true
		}
	}
	return 0, false
}

// ActiveMTU returns the port's active MTU for a link (netdev) MTU, by rxe's
// rule (doc/protocol.md §5.1): linkMTU − 80 rounded
// down to an MTU value, at least MTU256 and at most MTU4096. A 1500-byte
// link gives MTU1024, a 9000-byte one MTU4096.
func ActiveMTU(linkMTU int) MTU {
	payload := linkMTU - rxeMaxHdrLength
	for m := MTU4096; m > MTU256; m-- {
		if payload >= m.Bytes() {
			return m
		}
	}
	return MTU256
}
