package engine

import (
	"fmt"

	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// Role names the part of a QP that made a traced decision.
type Role uint8

// Roles that trace their decisions.
const (
	RoleResponder Role = iota
	RoleCompleter
)

func (r Role) String() string {
	if r == RoleResponder {
		return "responder"
	}
	return "completer"
}

// TraceEvent is one decision of a QP's responder (the outcome of a request
// packet) or completer (each phase a response passes through).
type TraceEvent struct {
	QPN    ib.QPN
	Role   Role
	Opcode wire.Opcode // of the packet decided on
	PSN    wire.PSN
	Step   string      // the outcome or phase
	Status ib.WCStatus // of the WQE the completer fails, at its "fail" phase
}

func (e TraceEvent) String() string {
	s := fmt.Sprintf("qp 0x%06x %s %v psn %d: %s", uint32(e.QPN), e.Role, e.Opcode, uint32(e.PSN), e.Step)
	if e.Status != ib.WCSuccess {
		s += " (" + e.Status.String() + ")"
	}
	return s
}

// TraceFunc receives a QP's trace events. It runs on the QP's turn, with
// the QP locked: it must be quick and must not call the QP.
type TraceFunc func(TraceEvent)

// SetTrace makes f receive the decisions of the QP's responder and
// completer; nil, the default, turns tracing off. Off, tracing costs one
// nil check per packet and phase, and nothing is formatted or allocated.
func (qp *QP) SetTrace(f TraceFunc) {
	qp.mu.Lock()
	qp.trace = f
	qp.mu.Unlock()
}

// traceResp reports a responder outcome; callers check qp.trace first.
func (qp *QP) traceResp(op wire.Opcode, psn wire.PSN, o respOutcome) {
	qp.trace(TraceEvent{QPN: ib.QPN(qp.qpn), Role: RoleResponder, Opcode: op, PSN: psn, Step: o.String()})
}

// traceComp reports a completer phase; callers check qp.trace first.
func (qp *QP) traceComp(c *compCtx, ph compPhase) {
	e := TraceEvent{QPN: ib.QPN(qp.qpn), Role: RoleCompleter, Opcode: c.p.Opcode(), PSN: c.psn, Step: ph.String()}
	if ph == compFail {
		e.Status = compErrors[c.err].status
	}
	qp.trace(e)
}
