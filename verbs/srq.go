package verbs

import (
	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// SRQAttr are a shared receive queue's attributes (struct ibv_srq_attr).
type SRQAttr struct {
	// MaxWR is how many receive requests it holds, 1..DeviceAttr.MaxQPWR,
	// rounded up to a power of two.
	MaxWR uint32
	// MaxSGE bounds RecvWR.SGList (0 means 1), at most DeviceAttr.MaxSGE.
	MaxSGE uint32
	// SRQLimit arms the limit event when non-zero: once a message takes a
	// receive request and leaves fewer than SRQLimit, the device raises
	// EventSRQLimitReached and the SRQ disarms (SRQLimit reads 0 again).
	// It must be below MaxWR.
	SRQLimit uint32
}

// SRQAttrMask selects the attributes SRQ.Modify sets (enum
// ibv_srq_attr_mask).
type SRQAttrMask uint8

// SRQ attribute mask bits.
const (
	SRQMaxWR SRQAttrMask = SRQAttrMask(ib.SRQMaxWR) // IBV_SRQ_MAX_WR: resize
	SRQLimit SRQAttrMask = SRQAttrMask(ib.SRQLimit) // IBV_SRQ_LIMIT: arm the limit event
)

// SRQ is a shared receive queue (struct ibv_srq): the QPs created on it
// (QPInitAttr.SRQ) take their receive requests from it, in the order they
// were posted, whichever QP a message arrives on; WC.QPNum tells which. A
// message arriving on an RC QP while the SRQ is empty is answered with an
// RNR NAK, and the sender retries.
type SRQ struct {
	e  *engine.SRQ
	pd *PD

	// Guarded by pd.dev.mu.
	closed bool
	qps    int // open QPs created on it
}

// CreateSRQ creates a shared receive queue (ibv_create_srq). A non-zero
// SRQLimit arms the limit event at once, as on rxe.
func (pd *PD) CreateSRQ(attr *SRQAttr) (*SRQ, error) {
	const verb = "create SRQ"
	if attr == nil {
		return nil, errorf(verb, "%w: no SRQAttr", ErrInvalidArgument)
	}
	pd.dev.mu.Lock()
	defer pd.dev.mu.Unlock()
	if err := pd.usable(); err != nil {
		return nil, errorf(verb, "%w", err)
	}
	e, err := pd.dev.e.CreateSRQ(pd.id, engine.SRQAttr{MaxWR: attr.MaxWR, MaxSGE: attr.MaxSGE, Limit: attr.SRQLimit})
	if err != nil {
		return nil, errorf(verb, "%w", err)
	}
	s := &SRQ{e: e, pd: pd}
	pd.srqs++
	pd.dev.async.add(e, s)
	return s, nil
}

// PostRecv posts a chain of receive work requests to the SRQ
// (ibv_post_srq_recv); it fails like QP.PostRecv.
func (s *SRQ) PostRecv(wr *RecvWR) error {
	if i, err := s.e.PostRecv(recvWR(wr)); err != nil {
		return &PostError{Verb: "post SRQ recv", Index: i, Err: err}
	}
	return nil
}

// Modify changes the attributes mask names (ibv_modify_srq): SRQMaxWR
// resizes it, keeping what it holds (refused below the requests posted);
// SRQLimit arms the limit event for attr.SRQLimit, or disarms it with 0.
func (s *SRQ) Modify(attr *SRQAttr, mask SRQAttrMask) error {
	if attr == nil {
		return errorf("modify SRQ", "%w: no SRQAttr", ErrInvalidArgument)
	}
	a := engine.SRQAttr{MaxWR: attr.MaxWR, MaxSGE: attr.MaxSGE, Limit: attr.SRQLimit}
	if err := s.e.Modify(a, ib.SRQAttrMask(mask)); err != nil {
		return errorf("modify SRQ", "%w", err)
	}
	return nil
}

// Query returns the attributes (ibv_query_srq): the size as allocated and
// the armed limit, 0 when not armed.
func (s *SRQ) Query() (SRQAttr, error) {
	s.pd.dev.mu.Lock()
	closed := s.closed || s.pd.dev.closed
	s.pd.dev.mu.Unlock()
	if closed {
		return SRQAttr{}, errorf("query SRQ", "%w", ErrClosed)
	}
	a := s.e.Query()
	return SRQAttr{MaxWR: a.MaxWR, MaxSGE: a.MaxSGE, SRQLimit: a.Limit}, nil
}

// Close destroys the SRQ (ibv_destroy_srq). It fails with ErrBusy while
// QPs created on it are open; receive requests it still holds are
// discarded without completions. Closing it again returns nil.
func (s *SRQ) Close() error {
	dev := s.pd.dev
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.qps > 0 {
		return errorf("destroy SRQ", "%w: %d QP(s) receive through it", ErrBusy, s.qps)
	}
	s.closed = true
	s.e.Close()
	s.pd.srqs--
	dev.async.remove(s.e)
	return nil
}
