package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/mem"
	"github.com/goverbs/goverbs/internal/wire"
)

// copySGEs copies between p and the memory an SGE list describes, starting
// off bytes into the list: into the SGEs when write is set (scatter, needs
// LOCAL_WRITE), out of them otherwise (gather, local read is always
// allowed). Every SGE is checked against the MR table with the QP's PD.
// It returns mem.FaultBounds if the list is shorter than off+len(p).
func (qp *QP) copySGEs(sges []SGE, off uint32, p []byte, write bool) mem.Fault {
	return qp.moveSGEs(sges, off, p, write, nil)
}

// gatherSGEs copies out of the SGEs into p, a packet's payload, as
// copySGEs does, and adds the bytes to the packet's ICRC from the region
// itself before each copy (see wire.ICRCState.Copy): the requester's one
// pass over the payload besides the copy.
func (qp *QP) gatherSGEs(sges []SGE, off uint32, p []byte, crc *wire.ICRCState) mem.Fault {
	return qp.moveSGEs(sges, off, p, false, crc)
}

// sgeAt returns the SGE under bytes [off, off+n) of an SGE list and the
// offset into it, when they lie within one SGE.
func sgeAt(sges []SGE, off, n uint32) (*SGE, uint32, bool) {
	for i := range sges {
		s := &sges[i]
		if off >= s.Length {
			off -= s.Length
			continue
		}
		return s, off, n <= s.Length-off
	}
	return nil, 0, false
}

// sgeSpan acquires the region under bytes [off, off+n) of an SGE list for
// reading, which lie within one SGE (sgeAt). The caller releases ref.
func (qp *QP) sgeSpan(sges []SGE, off, n uint32) (ref mem.Ref, f mem.Fault) {
	s, off, _ := sgeAt(sges, off, n)
	return qp.dev.mrs.Acquire(mem.Key(s.LKey), qp.pd, s.Addr+uint64(off), uint64(n), 0)
}

func (qp *QP) moveSGEs(sges []SGE, off uint32, p []byte, write bool, crc *wire.ICRCState) mem.Fault {
	need := ib.AccessFlags(0)
	if write {
		need = ib.AccessLocalWrite
	}
	for i := range sges {
		s := &sges[i]
		if len(p) == 0 {
			return mem.FaultNone
		}
		if off >= s.Length {
			off -= s.Length
			continue
		}
		n := min(uint32(len(p)), s.Length-off)
		ref, f := qp.dev.mrs.Acquire(mem.Key(s.LKey), qp.pd, s.Addr+uint64(off), uint64(n), need)
		if f != mem.FaultNone {
			return f
		}
		switch {
		case write:
			mem.Place(ref.Bytes(), p[:n])
		case crc != nil:
			crc.Copy(p[:n], ref.Bytes())
		default:
			copy(p[:n], ref.Bytes())
		}
		ref.Release()
		p = p[n:]
		off = 0
	}
	if len(p) != 0 {
		return mem.FaultBounds
	}
	return mem.FaultNone
}
