package ib

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalidTransition is returned, wrapped with the states and QP type,
	// when a QP may not move from its current state to the requested one.
	ErrInvalidTransition = errors.New("invalid QP state transition")
	// ErrInvalidAttrMask is returned, wrapped with the attributes at fault,
	// when a transition is allowed but the attribute mask lacks one it
	// requires or names one it does not accept.
	ErrInvalidAttrMask = errors.New("invalid QP attribute mask")
)

// attrRule is one cell of the transition table: whether a QP type may make
// the transition, and which attributes besides QPAttrState it must and may
// set.
type attrRule struct {
	allowed  bool
	required QPAttrMask
	optional QPAttrMask
}

// Positions of the QP types in a typeRules.
const (
	rc = iota
	uc
	ud
	numQPTypes
)

// typeRules are the rules of one transition, per QP type.
type typeRules [numQPTypes]attrRule

// noAttrs is a transition every QP type may make with no attribute but
// QPAttrState: any→RESET and any→ERR (doc/protocol.md §11.5).
var noAttrs = typeRules{rc: {allowed: true}, uc: {allowed: true}, ud: {allowed: true}}

// qpStateTable holds the IBA QP state transition properties (IBA 10.3.1,
// as the kernel's verbs layer tabulates them) for RC, UC and UD, indexed
// [cur][next][type]: the allowed transitions of doc/protocol.md §11.2 and the
// required and optional attributes of §11.4. A zero cell is a transition
// the type may not make. One difference from the kernel, after §11.2: SQE→RTS
// is allowed for UC and UD only, as RC errors go straight to ERR.
var qpStateTable = [numQPStates][numQPStates]typeRules{
	QPStateReset: {
		QPStateReset: noAttrs,
		QPStateInit: {
			rc: {allowed: true, required: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			uc: {allowed: true, required: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			ud: {allowed: true, required: QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		},
	},
	QPStateInit: {
		QPStateReset: noAttrs,
		QPStateInit: {
			rc: {allowed: true, optional: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			uc: {allowed: true, optional: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			ud: {allowed: true, optional: QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		},
		QPStateRTR: {
			rc: {allowed: true,
				required: QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer,
				optional: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
			uc: {allowed: true,
				required: QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN,
				optional: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
			ud: {allowed: true, optional: QPAttrPKeyIndex | QPAttrQKey},
		},
		QPStateErr: noAttrs,
	},
	QPStateRTR: {
		QPStateReset: noAttrs,
		QPStateRTS: {
			rc: {allowed: true,
				required: QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic,
				optional: QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrMinRNRTimer | QPAttrPathMigState},
			uc: {allowed: true, required: QPAttrSQPSN,
				optional: QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrPathMigState},
			ud: {allowed: true, required: QPAttrSQPSN, optional: QPAttrCurState | QPAttrQKey},
		},
		QPStateErr: noAttrs,
	},
	QPStateRTS: {
		QPStateReset: noAttrs,
		QPStateRTS: {
			rc: {allowed: true,
				optional: QPAttrCurState | QPAttrAccessFlags | QPAttrAltPath | QPAttrPathMigState | QPAttrMinRNRTimer},
			uc: {allowed: true, optional: QPAttrCurState | QPAttrAccessFlags | QPAttrAltPath | QPAttrPathMigState},
			ud: {allowed: true, optional: QPAttrCurState | QPAttrQKey},
		},
		QPStateSQD: {
			rc: {allowed: true, optional: QPAttrEnSQDAsyncNotify},
			uc: {allowed: true, optional: QPAttrEnSQDAsyncNotify},
			ud: {allowed: true, optional: QPAttrEnSQDAsyncNotify},
		},
		QPStateErr: noAttrs,
	},
	QPStateSQD: {
		QPStateReset: noAttrs,
		QPStateRTS: {
			rc: {allowed: true,
				optional: QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrMinRNRTimer | QPAttrPathMigState},
			uc: {allowed: true, optional: QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrPathMigState},
			ud: {allowed: true, optional: QPAttrCurState | QPAttrQKey},
		},
		QPStateSQD: {
			rc: {allowed: true,
				optional: QPAttrPort | QPAttrAV | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry |
					QPAttrMaxQPRdAtomic | QPAttrMaxDestRdAtomic | QPAttrAltPath | QPAttrAccessFlags |
					QPAttrPKeyIndex | QPAttrMinRNRTimer | QPAttrPathMigState},
			uc: {allowed: true,
				optional: QPAttrAV | QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex | QPAttrPathMigState},
			ud: {allowed: true, optional: QPAttrPKeyIndex | QPAttrQKey},
		},
		QPStateErr: noAttrs,
	},
	QPStateSQE: {
		QPStateReset: noAttrs,
		QPStateRTS: {
			uc: {allowed: true, optional: QPAttrCurState | QPAttrAccessFlags},
			ud: {allowed: true, optional: QPAttrCurState | QPAttrQKey},
		},
		QPStateErr: noAttrs,
	},
	QPStateErr: {
		QPStateReset: noAttrs,
		QPStateErr:   noAttrs,
	},
}

// CheckTransition checks a modify-QP call against the QP state machine
// (doc/protocol.md §11.2, §11.4; linux ib_modify_qp_is_ok): a QP of type t in
// state cur asks for state next, setting the attributes in mask.
//
// The transition must be allowed for t, or the error wraps
// ErrInvalidTransition. Then mask must hold every attribute the transition
// requires and nothing outside its required and optional attributes, or the
// error wraps ErrInvalidAttrMask and names the attributes. QPAttrState is
// needed to change state and always accepted. A mask without QPAttrState
// keeps the QP in cur: next must equal cur, and the mask is checked against
// the cur→cur row (INIT, RTS and SQD accept attributes that way; RESET and
// ERR accept none; RTR and SQE have no such row).
func CheckTransition(t QPType, cur, next QPState, mask QPAttrMask) error {
	ti, ok := typeIndex(t)
	if !ok {
		return fmt.Errorf("%w: QP type %v is not RC, UC or UD", ErrInvalidTransition, t)
	}
	if cur >= numQPStates || next >= numQPStates || !qpStateTable[cur][next][ti].allowed {
		return fmt.Errorf("%w: %v to %v (%v QP)", ErrInvalidTransition, cur, next, t)
	}
	if mask&QPAttrState == 0 && next != cur {
		return fmt.Errorf("%w: %v to %v (%v QP): missing STATE", ErrInvalidAttrMask, cur, next, t)
	}
	r := qpStateTable[cur][next][ti]
	var faults []string
	if missing := r.required &^ mask; missing != 0 {
		faults = append(faults, "missing "+missing.String())
	}
	if extra := mask &^ (r.required | r.optional | QPAttrState); extra != 0 {
		faults = append(faults, "not accepted "+extra.String())
	}
	if faults != nil {
		return fmt.Errorf("%w: %v to %v (%v QP): %s", ErrInvalidAttrMask, cur, next, t, strings.Join(faults, "; "))
	}
	return nil
}

// typeIndex returns t's position in a typeRules.
func typeIndex(t QPType) (int, bool) {
	switch t {
	case QPTypeRC:
		return rc, true
	case QPTypeUC:
		return uc, true
	case QPTypeUD:
		return ud, true
	}
	return 0, false
}
