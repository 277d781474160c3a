package ib_test

import (
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestEventType(t *testing.T) {
	// enum ibv_event_type and ibv_event_type_str, rdma-core libibverbs.
	for _, tc := range []struct {
		e     ib.EventType
		value uint8
		str   string
	}{
		{ib.EventCQErr, 0, "CQ error"},
		{ib.EventQPFatal, 1, "local work queue catastrophic error"},
		{ib.EventQPReqErr, 2, "invalid request local work queue error"},
		{ib.EventQPAccessErr, 3, "local access violation work queue error"},
		{ib.EventCommEst, 4, "communication established"},
		{ib.EventSQDrained, 5, "send queue drained"},
		{ib.EventPathMig, 6, "path migrated"},
		{ib.EventPathMigErr, 7, "path migration request error"},
		{ib.EventDeviceFatal, 8, "local catastrophic error"},
		{ib.EventPortActive, 9, "port active"},
		{ib.EventPortErr, 10, "port error"},
		{ib.EventSRQErr, 14, "SRQ catastrophic error"},
		{ib.EventSRQLimitReached, 15, "SRQ limit reached"},
		{ib.EventQPLastWQEReached, 16, "last WQE reached"},
		{ib.EventWQFatal, 19, "WQ fatal"},
		{20, 20, "EventType(20)"},
	} {
		if uint8(tc.e) != tc.value {
			t.Errorf("%s = %d, want %d", tc.str, uint8(tc.e), tc.value)
		}
		if got := tc.e.String(); got != tc.str {
			t.Errorf("EventType(%d).String() = %q, want %q", tc.value, got, tc.str)
		}
	}
	if ib.SRQMaxWR != 1 || ib.SRQLimit != 2 {
		t.Errorf("IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT = %d, %d, want 1, 2", ib.SRQMaxWR, ib.SRQLimit)
	}
}
