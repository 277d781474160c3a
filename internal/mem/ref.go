package mem

// Ref is a checked access in progress: it holds its region so that
// Deregister waits for it, and it carries the exact bytes the access may
// touch. The zero Ref holds nothing.
type Ref struct {
	r *Region
	b []byte
}

// Bytes returns the target memory: exactly [va, va+length) of the access,
// with its capacity cut at the same end so an append cannot spill into
// the rest of the region. It returns nil after Release.
func (ref *Ref) Bytes() []byte { return ref.b }

// Release ends the access. It clears ref, so releasing the same variable
// twice is harmless; releasing a copy of a released Ref is a bug and
// panics when it drives the count below zero.
func (ref *Ref) Release() {
	if ref.r == nil {
		return
	}
	if ref.r.refs.Add(-1) < 0 {
		panic("mem: Ref released more times than acquired")
	}
	*ref = Ref{}
}
