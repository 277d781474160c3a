package verbs

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/internal/engine"
	"github.com/goverbs/goverbs/internal/ib"
)

// QP is a queue pair (struct ibv_qp).
type QP struct {
	e              *engine.QP
	pd             *PD
	sendCQ, recvCQ *CQ
	srq            *SRQ // nil unless created on one

	closed bool // guarded by pd.dev.mu
}

// QPN returns the queue pair number.
func (qp *QP) QPN() QPN { return QPN(qp.e.QPN()) }

// Type returns the QP's transport service type, RC, UC or UD
// (ibv_qp.qp_type).
func (qp *QP) Type() QPType { return QPType(qp.e.Type()) }

// State returns the current state; ERR once the QP or its device is
// closed.
func (qp *QP) State() QPState { return QPState(qp.e.State()) }

// Cap returns the capacities, with queue sizes as allocated.
func (qp *QP) Cap() QPCap { return QPCap(qp.e.Cap()) }

// Modify changes attributes and state (ibv_modify_qp): those named in
// mask are read from attr. The transition and the attributes must follow
// the IBA state table (IBA 10.3.1); moving an RC QP to RTR needs at least
// DestQPN, RQPSN, PathMTU, MaxDestRdAtomic, MinRNRTimer and an AH with
// IsGlobal and DGID (and DestPort for a peer not on port 4791). ConnectRC
// does all three steps.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	if attr == nil {
		return errorf("modify QP", "QP 0x%06x: %w: no QPAttr", uint32(qp.QPN()), ErrInvalidArgument)
	}
	if err := qp.e.Modify(engineQPAttr(attr), ib.QPAttrMask(mask)); err != nil {
		return errorf("modify QP", "QP 0x%06x: %w", uint32(qp.QPN()), err)
	}
	return nil
}

// Query returns the current attributes (ibv_query_qp).
func (qp *QP) Query() (QPAttr, error) {
	if qp.e.Closed() {
		return QPAttr{}, errorf("query QP", "QP 0x%06x: %w", uint32(qp.QPN()), ErrClosed)
	}
	a := qp.e.Query()
	return *fromEngineQPAttr(&a), nil
}

// PostSend posts a chain of send work requests (ibv_post_send). It fails,
// with a PostError, only for what is wrong at once: a closed QP, the QP's
// state, a full queue, a malformed request. Everything else, a refused
// rkey say, is reported by a work completion.
func (qp *QP) PostSend(wr *SendWR) error {
	if i, err := qp.e.PostSend(sendWR(wr)); err != nil {
		return &PostError{Verb: "post send", QPN: qp.QPN(), Index: i, Err: stateErr(err, "sends need RTS")}
	}
	return nil
}

// PostRecv posts a chain of receive work requests (ibv_post_recv); it
// fails like PostSend.
func (qp *QP) PostRecv(wr *RecvWR) error {
	if i, err := qp.e.PostRecv(recvWR(wr)); err != nil {
		return &PostError{Verb: "post recv", QPN: qp.QPN(), Index: i, Err: stateErr(err, "receives need INIT")}
	}
	return nil
}

// stateErr adds to a posting error that is ErrQPState, which names the
// state the QP refused it in, the state the post needs.
func stateErr(err error, need string) error {
	if !errors.Is(err, ErrQPState) {
		return err
	}
	return fmt.Errorf("%w, %s or later", err, need)
}

// Close destroys the queue pair (ibv_destroy_qp): it receives nothing
// more, its outstanding work requests are discarded without completions,
// and its PD and CQs may then be closed. Closing it again returns nil.
func (qp *QP) Close() error {
	dev := qp.pd.dev
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if qp.closed {
		return nil
	}
	qp.closed = true
	qp.e.Destroy()
	qp.pd.qps--
	qp.sendCQ.qps--
	qp.recvCQ.qps--
	if qp.srq != nil {
		qp.srq.qps--
	}
	dev.async.remove(qp.e)
	return nil
}
