package ib_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

const (
	reset = ib.QPStateReset
	initS = ib.QPStateInit
	rtr   = ib.QPStateRTR
	rts   = ib.QPStateRTS
	sqd   = ib.QPStateSQD
	sqe   = ib.QPStateSQE
	errS  = ib.QPStateErr
)

var (
	allStates = []ib.QPState{reset, initS, rtr, rts, sqd, sqe, errS}
	allTypes  = []ib.QPType{ib.QPTypeRC, ib.QPTypeUC, ib.QPTypeUD}
)

// spec114 is the required/optional attribute table of IBA 10.3.1 as the Linux
// core applies it (doc/protocol.md §11.4 shows its RC rows), transcribed row by
// row with libibverbs' attribute names, plus the any→RESET and any (except
// RESET)→ERR transitions of doc/protocol.md §11.2.
var spec114 = []struct {
	from, to           ib.QPState
	types              string
	required, optional string
}{
	{reset, initS, "RC", "PKEY_INDEX, PORT, ACCESS_FLAGS", ""},
	{reset, initS, "UC", "PKEY_INDEX, PORT, ACCESS_FLAGS", ""},
	{reset, initS, "UD", "PKEY_INDEX, PORT, QKEY", ""},
	{initS, initS, "RC UC", "", "PKEY_INDEX, PORT, ACCESS_FLAGS"},
	{initS, initS, "UD", "", "PKEY_INDEX, PORT, QKEY"},
	{initS, rtr, "RC", "AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER", "ALT_PATH, ACCESS_FLAGS, PKEY_INDEX"},
	{initS, rtr, "UC", "AV, PATH_MTU, DEST_QPN, RQ_PSN", "ALT_PATH, ACCESS_FLAGS, PKEY_INDEX"},
	{initS, rtr, "UD", "", "PKEY_INDEX, QKEY"},
	{rtr, rts, "RC", "SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC", "CUR_STATE, ALT_PATH, ACCESS_FLAGS, MIN_RNR_TIMER, PATH_MIG_STATE"},
	{rtr, rts, "UC", "SQ_PSN", "CUR_STATE, ALT_PATH, ACCESS_FLAGS, PATH_MIG_STATE"},
	{rtr, rts, "UD", "SQ_PSN", "CUR_STATE, QKEY"},
	{rts, rts, "RC", "", "CUR_STATE, ACCESS_FLAGS, ALT_PATH, PATH_MIG_STATE, MIN_RNR_TIMER"},
	{rts, rts, "UC", "", "CUR_STATE, ACCESS_FLAGS, ALT_PATH, PATH_MIG_STATE"},
	{rts, rts, "UD", "", "CUR_STATE, QKEY"},
	{rts, sqd, "RC UC UD", "", "EN_SQD_ASYNC_NOTIFY"},
	{sqd, rts, "RC", "", "CUR_STATE, ALT_PATH, ACCESS_FLAGS, MIN_RNR_TIMER, PATH_MIG_STATE"},
	{sqd, rts, "UC", "", "CUR_STATE, ALT_PATH, ACCESS_FLAGS, PATH_MIG_STATE"},
	{sqd, rts, "UD", "", "CUR_STATE, QKEY"},
	{sqd, sqd, "RC", "", "PORT, AV, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC, MAX_DEST_RD_ATOMIC, ALT_PATH, ACCESS_FLAGS, PKEY_INDEX, MIN_RNR_TIMER, PATH_MIG_STATE"},
	{sqd, sqd, "UC", "", "AV, ALT_PATH, ACCESS_FLAGS, PKEY_INDEX, PATH_MIG_STATE"},
	{sqd, sqd, "UD", "", "PKEY_INDEX, QKEY"},
	{sqe, rts, "UC", "", "CUR_STATE, ACCESS_FLAGS"},
	{sqe, rts, "UD", "", "CUR_STATE, QKEY"},

	{reset, reset, "RC UC UD", "", ""},
	{initS, reset, "RC UC UD", "", ""},
	{rtr, reset, "RC UC UD", "", ""},
	{rts, reset, "RC UC UD", "", ""},
	{sqd, reset, "RC UC UD", "", ""},
	{sqe, reset, "RC UC UD", "", ""},
	{errS, reset, "RC UC UD", "", ""},
	{initS, errS, "RC UC UD", "", ""},
	{rtr, errS, "RC UC UD", "", ""},
	{rts, errS, "RC UC UD", "", ""},
	{sqd, errS, "RC UC UD", "", ""},
	{sqe, errS, "RC UC UD", "", ""},
	{errS, errS, "RC UC UD", "", ""},
}

type cell struct {
	typ      ib.QPType
	from, to ib.QPState
}

type sets struct{ required, optional ib.QPAttrMask }

// parseAttrs turns "AV, PATH_MTU" into a mask, by libibverbs' attribute names.
func parseAttrs(t *testing.T, list string) ib.QPAttrMask {
	t.Helper()
	var m ib.QPAttrMask
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for _, b := range qpAttrBits {
			if b.name == name {
				m |= b.bit
				found = true
			}
		}
		if !found {
			t.Fatalf("unknown attribute %q in the spec114 table", name)
		}
	}
	return m
}

func specCells(t *testing.T) map[cell]sets {
	cells := make(map[cell]sets)
	for _, row := range spec114 {
		for name := range strings.FieldsSeq(row.types) {
			var typ ib.QPType
			for _, ty := range allTypes {
				if ty.String() == name {
					typ = ty
				}
			}
			c := cell{typ, row.from, row.to}
			if _, dup := cells[c]; dup || typ == 0 {
				t.Fatalf("bad spec114 row %v→%v %s", row.from, row.to, name)
			}
			cells[c] = sets{parseAttrs(t, row.required), parseAttrs(t, row.optional)}
		}
	}
	return cells
}

// TestCheckTransitionSpec runs every transition of every QP type against
// spec114: the required attributes pass, with or without the optional ones;
// dropping any required one or adding any other attribute fails naming it;
// transitions not in the table fail as invalid.
func TestCheckTransitionSpec(t *testing.T) {
	cells := specCells(t)
	for _, typ := range allTypes {
		for _, from := range allStates {
			for _, to := range allStates {
				name := fmt.Sprintf("%v/%v→%v", typ, from, to)
				s, ok := cells[cell{typ, from, to}]
				if !ok {
					t.Run(name, func(t *testing.T) { checkDisallowed(t, typ, from, to) })
					continue
				}
				t.Run(name, func(t *testing.T) { checkAllowed(t, typ, from, to, s) })
			}
		}
	}
}

func checkAllowed(t *testing.T, typ ib.QPType, from, to ib.QPState, s sets) {
	base := ib.QPAttrState | s.required
	for _, mask := range []ib.QPAttrMask{base, base | s.optional} {
		if err := ib.CheckTransition(typ, from, to, mask); err != nil {
			t.Errorf("mask %v: %v", mask, err)
		}
	}
	if from == to {
		// Without STATE the QP stays put and the same row applies.
		if err := ib.CheckTransition(typ, from, to, s.required|s.optional); err != nil {
			t.Errorf("mask %v without STATE: %v", s.required|s.optional, err)
		}
	}
	for _, b := range qpAttrBits {
		switch {
		case b.bit == ib.QPAttrState:
		case b.bit&s.required != 0:
			wantMaskErr(t, typ, from, to, (base|s.optional)&^b.bit, "missing "+b.name)
		case b.bit&s.optional == 0:
			wantMaskErr(t, typ, from, to, base|b.bit, "not accepted "+b.name)
		}
	}
}

func wantMaskErr(t *testing.T, typ ib.QPType, from, to ib.QPState, mask ib.QPAttrMask, want string) {
	t.Helper()
	err := ib.CheckTransition(typ, from, to, mask)
	if !errors.Is(err, ib.ErrInvalidAttrMask) || errors.Is(err, ib.ErrInvalidTransition) {
		t.Errorf("mask %v: got %v, want ErrInvalidAttrMask", mask, err)
		return
	}
	if !strings.HasSuffix(err.Error(), ": "+want) {
		t.Errorf("mask %v: got %q, want it to end %q", mask, err, want)
	}
}

func checkDisallowed(t *testing.T, typ ib.QPType, from, to ib.QPState) {
	masks := []ib.QPAttrMask{ib.QPAttrState, 0x20fffff}
	if from == to {
		masks = append(masks, 0) // staying put is not a way around the table
	}
	for _, mask := range masks {
		err := ib.CheckTransition(typ, from, to, mask)
		if !errors.Is(err, ib.ErrInvalidTransition) {
			t.Errorf("mask %v: got %v, want ErrInvalidTransition", mask, err)
			continue
		}
		want := fmt.Sprintf("%v to %v (%v QP)", from, to, typ)
		if !strings.HasSuffix(err.Error(), want) {
			t.Errorf("mask %v: got %q, want it to name %q", mask, err, want)
		}
	}
}

func TestCheckTransitionErrors(t *testing.T) {
	const (
		state = ib.QPAttrState
		rc    = ib.QPTypeRC
	)
	rtrRC := state | ib.QPAttrAV | ib.QPAttrPathMTU | ib.QPAttrDestQPN | ib.QPAttrRQPSN |
		ib.QPAttrMaxDestRdAtomic | ib.QPAttrMinRNRTimer
	for _, tc := range []struct {
		typ      ib.QPType
		from, to ib.QPState
		mask     ib.QPAttrMask
		want     string
	}{
		{rc, reset, rtr, rtrRC, "invalid QP state transition: RESET to RTR (RC QP)"},
		{rc, initS, rts, state | ib.QPAttrSQPSN, "invalid QP state transition: INIT to RTS (RC QP)"},
		{rc, reset, errS, state, "invalid QP state transition: RESET to ERR (RC QP)"},
		{rc, sqe, rts, state, "invalid QP state transition: SQE to RTS (RC QP)"},
		{ib.QPTypeUD, rtr, rtr, 0, "invalid QP state transition: RTR to RTR (UD QP)"},
		{rc, rts, 7, state, "invalid QP state transition: RTS to QPState(7) (RC QP)"},
		{9, rts, 7, state, "invalid QP state transition: QP type QPType(9) is not RC, UC or UD"},
		{0, reset, initS, state, "invalid QP state transition: QP type QPType(0) is not RC, UC or UD"},
		{rc, reset, initS, ib.QPAttrPKeyIndex | ib.QPAttrPort | ib.QPAttrAccessFlags,
			"invalid QP attribute mask: RESET to INIT (RC QP): missing STATE"},
		{rc, reset, initS, state | ib.QPAttrPKeyIndex | ib.QPAttrAV,
			"invalid QP attribute mask: RESET to INIT (RC QP): missing ACCESS_FLAGS|PORT; not accepted AV"},
		{rc, initS, rtr, rtrRC | ib.QPAttrCap,
			"invalid QP attribute mask: INIT to RTR (RC QP): not accepted CAP"},
		{ib.QPTypeUC, initS, rtr, state | ib.QPAttrAV | ib.QPAttrPathMTU,
			"invalid QP attribute mask: INIT to RTR (UC QP): missing RQ_PSN|DEST_QPN"},
		{rc, initS, initS, ib.QPAttrCurState,
			"invalid QP attribute mask: INIT to INIT (RC QP): not accepted CUR_STATE"},
		{rc, rts, errS, state | ib.QPAttrCurState,
			"invalid QP attribute mask: RTS to ERR (RC QP): not accepted CUR_STATE"},
	} {
		err := ib.CheckTransition(tc.typ, tc.from, tc.to, tc.mask)
		if err == nil || err.Error() != tc.want {
			t.Errorf("CheckTransition(%v, %v, %v, %v) = %v, want %q", tc.typ, tc.from, tc.to, tc.mask, err, tc.want)
		}
	}
}
