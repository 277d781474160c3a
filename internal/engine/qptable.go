package engine

import "sync/atomic"

// QP numbers are 24 bits (IBA 9.2 DestQP); the table splits them into a
// top index and a chunk index of 12 bits each.
const (
	qpnChunkBits = 12
	qpnChunkSize = 1 << qpnChunkBits
)

// qpTable maps QP numbers to QPs. The receive path looks a QP up for every
// packet without a lock: two atomic loads, no hashing. Writers (create and
// destroy) are serialised by the device's mu; each costs O(1) whatever the
// number of QPs, where a copy-on-write map cost O(n) per QP created and so
// O(n²) to create n.
type qpTable struct {
	chunks [1 << (24 - qpnChunkBits)]atomic.Pointer[[qpnChunkSize]atomic.Pointer[QP]]
	n      int // QPs in the table; guarded by the device's mu
}

// get returns the QP numbered qpn, or nil.
func (t *qpTable) get(qpn uint32) *QP {
	c := t.chunks[(qpn>>qpnChunkBits)&(1<<(24-qpnChunkBits)-1)].Load()
	if c == nil {
		return nil
	}
	return c[qpn&(qpnChunkSize-1)].Load()
}

// set enters qp (or, with nil, removes the entry) under number qpn.
// Called with the device's mu held.
func (t *qpTable) set(qpn uint32, qp *QP) {
	slot := &t.chunks[(qpn>>qpnChunkBits)&(1<<(24-qpnChunkBits)-1)]
	c := slot.Load()
	if c == nil {
		if qp == nil {
			return
		}
		c = new([qpnChunkSize]atomic.Pointer[QP])
		slot.Store(c)
	}
	e := &c[qpn&(qpnChunkSize-1)]
	switch old := e.Swap(qp); {
	case old == nil && qp != nil:
		t.n++
	case old != nil && qp == nil:
		t.n--
	}
}

// all appends every QP in the table to buf. Called with the device's mu
// held.
func (t *qpTable) all(buf []*QP) []*QP {
	for i := range t.chunks {
		c := t.chunks[i].Load()
		if c == nil {
			continue
		}
		for j := range c {
			if qp := c[j].Load(); qp != nil {
				buf = append(buf, qp)
			}
		}
	}
	return buf
}
