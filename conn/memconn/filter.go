package memconn

import "net/netip"

// Datagram is a datagram in flight, as a filter sees it. Data is the
// fabric's own copy: a filter may change it without touching the
// sender's buffer.
type Datagram struct {
	Src, Dst netip.AddrPort
	Data     []byte
}

// Verdict is a filter's decision on a datagram.
type Verdict int

const (
	// Deliver lets the datagram through (to the random impairments).
	Deliver Verdict = iota
	// Drop discards the datagram (Stats.Dropped.Filter).
	Drop
	// Duplicate delivers the datagram twice (Stats.Duplicated).
	Duplicate
)

// String returns the verdict's name.
func (v Verdict) String() string {
	switch v {
	case Deliver:
		return "Deliver"
	case Drop:
		return "Drop"
	case Duplicate:
		return "Duplicate"
	}
	return "Verdict(?)"
}

// filter runs f on p and takes back whatever f left in the datagram's
// Data: the same bytes (possibly changed or resliced in place) or another
// slice, which is copied in.
func (p *packet) filter(f func(*Datagram) Verdict) Verdict {
	p.dg = Datagram{Src: p.src, Dst: p.dst, Data: p.buf}
	v := f(&p.dg)
	d := p.dg.Data
	switch {
	case len(d) > MaxDatagramSize:
		v = Drop // a filter cannot send what Send would refuse
	case len(d) == 0:
		p.buf = p.buf[:0]
	case len(p.buf) > 0 && &d[0] == &p.buf[0] && len(d) <= cap(p.buf):
		p.buf = p.buf[:len(d)]
	default:
		p.buf = append(p.buf[:0], d...)
	}
	p.dg = Datagram{} // the filter must not hold on to the packet's buffer
	return v
}
