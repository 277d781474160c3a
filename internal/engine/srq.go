package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/queue"
)

// ErrSRQAttached refuses PostRecv on a QP created on an SRQ: post to the
// SRQ (rxe answers EINVAL).
var ErrSRQAttached = fmt.Errorf("%w: the QP receives through its SRQ", ErrInvalidArgument)

// SRQAttr are an SRQ's attributes (struct ibv_srq_attr).
type SRQAttr struct {
	MaxWR  uint32 // receive WQEs it holds (rounded up to a power of two)
	MaxSGE uint32 // SGEs per receive WQE
	Limit  uint32 // armed limit; 0 when not armed
}

// SRQ is a shared receive queue: QPs created on it take their receive
// WQEs from it, in the order posted, whichever QP a message arrives on.
//
// The QP turns that consume it run on several goroutines at once, so
// everything is guarded by mu: posts, takes, resizing and the limit.
type SRQ struct {
	dev    *Device
	pd     uint32
	mu     sync.Mutex
	rq     *queue.Ring[recvWQE]
	maxSGE uint32
	limit  uint32 // armed while non-zero (doc/design.md §4)
	closed atomic.Bool
}

// CreateSRQ creates an SRQ in protection domain pd (ibv_create_srq). A
// non-zero Limit arms it at once, as rxe does.
func (d *Device) CreateSRQ(pd uint32, a SRQAttr) (*SRQ, error) {
	if a.MaxWR == 0 || a.MaxWR > MaxQPWR || a.MaxSGE > MaxSGE {
		return nil, fmt.Errorf("%+v: %w (WRs 1..%d, SGEs ≤ %d)", a, ErrBadCapability, MaxQPWR, MaxSGE)
	}
	if size := roundPow2(int(a.MaxWR)); a.Limit >= uint32(size) {
		return nil, fmt.Errorf("%w: limit %d, must be below max_wr %d", ErrInvalidArgument, a.Limit, size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if d.srqs >= MaxSRQ {
		return nil, fmt.Errorf("%d SRQs exist, the maximum", d.srqs)
	}
	d.srqs++
	s := &SRQ{dev: d, pd: pd, maxSGE: max(a.MaxSGE, 1), limit: a.Limit}
	s.rq = s.newRing(int(a.MaxWR))
	return s, nil
}

// newRing makes a ring of n receive slots with their SGE storage.
func (s *SRQ) newRing(n int) *queue.Ring[recvWQE] {
	r := queue.New[recvWQE](n)
	for i := range r.Cap() {
		r.At(uint32(i)).sge = make([]SGE, 0, s.maxSGE)
	}
	return r
}

// Query returns the attributes: the limit reads 0 once the limit event
// fired and until it is armed again.
func (s *SRQ) Query() SRQAttr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SRQAttr{MaxWR: uint32(s.rq.Cap()), MaxSGE: s.maxSGE, Limit: s.limit}
}

// Modify resizes the SRQ (ib.SRQMaxWR), keeping the WQEs it holds, and arms
// the limit (ib.SRQLimit): the limit event fires once, when a take leaves
// fewer WQEs than the limit, which then reads 0 (ibv_modify_srq).
func (s *SRQ) Modify(a SRQAttr, mask ib.SRQAttrMask) error {
	if mask&^(ib.SRQMaxWR|ib.SRQLimit) != 0 {
		return fmt.Errorf("%w: mask %#x", ErrInvalidArgument, mask)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || s.dev.Dead() {
		return ErrClosed
	}
	size := s.rq.Cap()
	if mask&ib.SRQMaxWR != 0 {
		if a.MaxWR == 0 || a.MaxWR > MaxQPWR {
			return fmt.Errorf("%w: max_wr %d, must be 1..%d", ErrBadCapability, a.MaxWR, MaxQPWR)
		}
		size = roundPow2(int(a.MaxWR)) // as the ring rounds it
		if size < s.rq.Len() {
			return fmt.Errorf("%w: max_wr %d, but %d WQEs are posted", ErrInvalidArgument, a.MaxWR, s.rq.Len())
		}
	}
	limit := s.limit
	if mask&ib.SRQLimit != 0 {
		limit = a.Limit
	}
	if limit >= uint32(size) {
		return fmt.Errorf("%w: limit %d, must be below max_wr %d", ErrInvalidArgument, limit, size)
	}
	if size != s.rq.Cap() {
		r := s.newRing(size)
		for w := s.rq.Peek(); w != nil; w = s.rq.Peek() {
			n := r.Reserve()
			n.wrID, n.length = w.wrID, w.length
			n.sge = append(n.sge[:0], w.sge...)
			r.Commit()
			s.rq.Pop()
		}
		s.rq = r
	}
	s.limit = limit
	return nil
}

// Close makes later posts fail with ErrClosed. The caller makes sure no QP
// uses the SRQ any more (ibv_destroy_srq refuses with EBUSY).
func (s *SRQ) Close() {
	if !s.closed.Swap(true) {
		s.dev.mu.Lock()
		s.dev.srqs--
		s.dev.mu.Unlock()
	}
}

// PostRecv queues a chain of receive work requests (ibv_post_srq_recv); it
// fails and reports like QP.PostRecv.
func (s *SRQ) PostRecv(wr *RecvWR) (bad int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || s.dev.Dead() {
		return 0, ErrClosed
	}
	i := 0
	for ; wr != nil; wr, i = wr.Next, i+1 {
		if len(wr.SGList) > int(s.maxSGE) {
			return i, ErrTooManySGE
		}
		if err = checkLKeys(wr.SGList); err != nil {
			return i, err
		}
		w := s.rq.Reserve()
		if w == nil {
			return i, ErrQueueFull
		}
		w.wrID = wr.WRID
		w.sge = append(w.sge[:0], wr.SGList...)
		w.length = 0
		for j := range w.sge {
			w.length += w.sge[j].Length
		}
		s.rq.Commit()
	}
	return i, nil
}

// take moves the oldest WQE into dst and reports whether there was one.
// Leaving fewer WQEs than an armed limit raises SRQ_LIMIT_REACHED and
// disarms it (doc/design.md §4, as rxe does).
func (s *SRQ) take(dst *recvWQE) bool {
	s.mu.Lock()
	w := s.rq.Peek()
	if w == nil {
		s.mu.Unlock()
		return false
	}
	dst.wrID, dst.length = w.wrID, w.length
	dst.sge = append(dst.sge[:0], w.sge...)
	s.rq.Pop()
	fire := s.limit > 0 && uint32(s.rq.Len()) < s.limit
	if fire {
		s.limit = 0
	}
	s.mu.Unlock()
	if fire {
		s.dev.raise(Event{Type: ib.EventSRQLimitReached, SRQ: s})
	}
	return true
}

// popRecv takes the next receive WQE for the responder: from the SRQ for
// a QP on one, else from the QP's own receive queue.
func (qp *QP) popRecv(dst *recvWQE) bool {
	if qp.srq != nil {
		return qp.srq.take(dst)
	}
	w := qp.rq.Peek()
	if w == nil {
		return false
	}
	dst.wrID, dst.length = w.wrID, w.length
	dst.sge = append(dst.sge[:0], w.sge...)
	qp.rq.Pop()
	return true
}

// lastWQEReached raises LAST_WQE_REACHED, once, for a QP on an SRQ that
// is in the error state: it will take no more WQEs from the SRQ, so the
// application may destroy it (IBA 10.3.1, 11.6.3.1). Called by flush.
func (qp *QP) lastWQEReached() {
	if qp.srq != nil && !qp.events.lastWQE {
		qp.events.lastWQE = true
		qp.dev.raise(Event{Type: ib.EventQPLastWQEReached, QP: qp})
	}
}
