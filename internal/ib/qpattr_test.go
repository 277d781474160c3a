package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

// qpAttrBits is enum ibv_qp_attr_mask as rdma-core's verbs.h lists it, with the
// names String uses (IBV_QP_ dropped).
var qpAttrBits = []struct {
	bit   ib.QPAttrMask
	value uint32
	name  string
}{
	{ib.QPAttrState, 0x1, "STATE"},
	{ib.QPAttrCurState, 0x2, "CUR_STATE"},
	{ib.QPAttrEnSQDAsyncNotify, 0x4, "EN_SQD_ASYNC_NOTIFY"},
	{ib.QPAttrAccessFlags, 0x8, "ACCESS_FLAGS"},
	{ib.QPAttrPKeyIndex, 0x10, "PKEY_INDEX"},
	{ib.QPAttrPort, 0x20, "PORT"},
	{ib.QPAttrQKey, 0x40, "QKEY"},
	{ib.QPAttrAV, 0x80, "AV"},
	{ib.QPAttrPathMTU, 0x100, "PATH_MTU"},
	{ib.QPAttrTimeout, 0x200, "TIMEOUT"},
	{ib.QPAttrRetryCnt, 0x400, "RETRY_CNT"},
	{ib.QPAttrRNRRetry, 0x800, "RNR_RETRY"},
	{ib.QPAttrRQPSN, 0x1000, "RQ_PSN"},
	{ib.QPAttrMaxQPRdAtomic, 0x2000, "MAX_QP_RD_ATOMIC"},
	{ib.QPAttrAltPath, 0x4000, "ALT_PATH"},
	{ib.QPAttrMinRNRTimer, 0x8000, "MIN_RNR_TIMER"},
	{ib.QPAttrSQPSN, 0x10000, "SQ_PSN"},
	{ib.QPAttrMaxDestRdAtomic, 0x20000, "MAX_DEST_RD_ATOMIC"},
	{ib.QPAttrPathMigState, 0x40000, "PATH_MIG_STATE"},
	{ib.QPAttrCap, 0x80000, "CAP"},
	{ib.QPAttrDestQPN, 0x100000, "DEST_QPN"},
	{ib.QPAttrRateLimit, 0x2000000, "RATE_LIMIT"},
}

func TestQPAttrMaskBits(t *testing.T) {
	for _, tc := range qpAttrBits {
		if uint32(tc.bit) != tc.value {
			t.Errorf("%s = %#x, want %#x", tc.name, uint32(tc.bit), tc.value)
		}
		if got := tc.bit.String(); got != tc.name {
			t.Errorf("QPAttrMask(%#x).String() = %q, want %q", tc.value, got, tc.name)
		}
	}
}

func TestQPAttrMaskString(t *testing.T) {
	for _, tc := range []struct {
		mask ib.QPAttrMask
		want string
	}{
		{0, "0"},
		{ib.QPAttrPathMTU | ib.QPAttrState | ib.QPAttrAV, "STATE|AV|PATH_MTU"},
		{ib.QPAttrState | ib.QPAttrPKeyIndex | ib.QPAttrPort | ib.QPAttrAccessFlags, "STATE|ACCESS_FLAGS|PKEY_INDEX|PORT"},
		{ib.QPAttrDestQPN | 0x200000 | 0x1000000, "DEST_QPN|0x1200000"}, // bits 21–24 are unnamed
		{0x80000000, "0x80000000"},
	} {
		if got := tc.mask.String(); got != tc.want {
			t.Errorf("QPAttrMask(%#x).String() = %q, want %q", uint32(tc.mask), got, tc.want)
		}
	}
}
