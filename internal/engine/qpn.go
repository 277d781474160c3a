package engine

import "math/rand/v2"

// QP numbers of a device start at a random base, as a hardware NIC's
// firmware hands them out, not at a fixed number: a QP of a restarted
// process then very probably has another number than the dead one, whose
// peer may still be retransmitting to it, so those packets are dropped as
// for an unknown QP (drop_unknown_qp) instead of being taken, or
// sequence-NAKed, by the new connection (doc/protocol.md §1.5). Numbers
// below firstQPN stay reserved (QP0, QP1, rxe's special QPs) and the 24
// bits of BTH.DestQP wrap to firstQPN; addQP keeps them unique.
func randomQPNBase() uint32 {
	return firstQPN + rand.Uint32N(qpnMask+1-firstQPN)
}

// nextFreeQPN returns the first number from n on (wrapping, skipping the
// reserved ones) that names no QP. Called with the device's mu held and
// fewer than MaxQP QPs in the table, so it ends.
func (d *Device) nextFreeQPN(n uint32) uint32 {
	for n < firstQPN || d.qps.get(n) != nil {
		n = (n + 1) & qpnMask
	}
	return n
}
