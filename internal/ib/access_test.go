package ib_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/internal/ib"
)

func TestAccessFlagValues(t *testing.T) {
	// The values of libibverbs' enum ibv_access_flags (doc/protocol.md §12.1).
	for _, tc := range []struct {
		flag ib.AccessFlags
		want uint32
		name string
	}{
		{ib.AccessLocalWrite, 0x1, "LOCAL_WRITE"},
		{ib.AccessRemoteWrite, 0x2, "REMOTE_WRITE"},
		{ib.AccessRemoteRead, 0x4, "REMOTE_READ"},
		{ib.AccessRemoteAtomic, 0x8, "REMOTE_ATOMIC"},
		{ib.AccessMWBind, 0x10, "MW_BIND"},
		{ib.AccessZeroBased, 0x20, "ZERO_BASED"},
		{ib.AccessOnDemand, 0x40, "ON_DEMAND"},
		{ib.AccessHugeTLB, 0x80, "HUGETLB"},
		{ib.AccessRelaxedOrdering, 0x100000, "RELAXED_ORDERING"},
	} {
		if uint32(tc.flag) != tc.want {
			t.Errorf("%s = %#x, want %#x", tc.name, uint32(tc.flag), tc.want)
		}
		if got := tc.flag.String(); got != tc.name {
			t.Errorf("AccessFlags(%#x).String() = %q, want %q", tc.want, got, tc.name)
		}
	}
}

func TestAccessFlagsString(t *testing.T) {
	for _, tc := range []struct {
		flags ib.AccessFlags
		want  string
	}{
		{0, "0"},
		{ib.AccessLocalWrite | ib.AccessRemoteRead, "LOCAL_WRITE|REMOTE_READ"},
		{ib.AccessRemoteAtomic | ib.AccessLocalWrite | ib.AccessRemoteWrite, "LOCAL_WRITE|REMOTE_WRITE|REMOTE_ATOMIC"},
		{0xff | ib.AccessRelaxedOrdering,
			"LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC|MW_BIND|ZERO_BASED|ON_DEMAND|HUGETLB|RELAXED_ORDERING"},
		{0x200, "0x200"},
		{ib.AccessLocalWrite | 0x300 | 0x80000000, "LOCAL_WRITE|0x80000300"},
	} {
		if got := tc.flags.String(); got != tc.want {
			t.Errorf("AccessFlags(%#x).String() = %q, want %q", uint32(tc.flags), got, tc.want)
		}
	}
}

func TestValidForMR(t *testing.T) {
	const (
		lw = ib.AccessLocalWrite
		rw = ib.AccessRemoteWrite
		rr = ib.AccessRemoteRead
		ra = ib.AccessRemoteAtomic
	)
	for _, tc := range []struct {
		flags   ib.AccessFlags
		wantErr string // substring of the error; "" for valid
	}{
		{0, ""}, // local read only
		{lw, ""},
		{rr, ""},
		{lw | rw, ""},
		{lw | ra, ""},
		{lw | rw | rr | ra, ""},
		{lw | ib.AccessRelaxedOrdering, ""},
		{rr | 0x3ff00000, ""}, // the whole optional range is ignored
		{rw, "REMOTE_WRITE requires LOCAL_WRITE"},
		{ra, "REMOTE_ATOMIC requires LOCAL_WRITE"},
		{rr | rw | ra, "REMOTE_WRITE|REMOTE_ATOMIC requires LOCAL_WRITE"},
		{rw | ib.AccessRelaxedOrdering, "REMOTE_WRITE requires LOCAL_WRITE"},
		{lw | ib.AccessMWBind, ""}, // windows may be bound to it
		{rr | ib.AccessMWBind, ""},
		{lw | ib.AccessZeroBased, "ZERO_BASED not supported"},
		{ib.AccessOnDemand, "ON_DEMAND not supported"},
		{ib.AccessHugeTLB, "HUGETLB not supported"},
		{lw | 0x100 | 0x200, "0x300 not supported"},           // FLUSH_GLOBAL, FLUSH_PERSISTENT
		{lw | 0x40000000, "0x40000000 not supported"},         // above the optional range
		{rw | ib.AccessZeroBased, "ZERO_BASED not supported"}, // unsupported bits reported first
	} {
		err := tc.flags.ValidForMR()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: ValidForMR() = %v, want nil", tc.flags, err)
		case tc.wantErr != "" && !errors.Is(err, ib.ErrInvalidAccessFlags):
			t.Errorf("%v: ValidForMR() = %v, want ErrInvalidAccessFlags", tc.flags, err)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%v: ValidForMR() = %q, want it to say %q", tc.flags, err, tc.wantErr)
		}
	}
}

func TestValidForMW(t *testing.T) {
	for _, tc := range []struct {
		flags   ib.AccessFlags
		wantErr string // substring of the error; "" for valid
	}{
		{0, ""}, // a window with no rights: bound, useless
		{ib.AccessRemoteRead, ""},
		{ib.AccessRemoteWrite, ""}, // LOCAL_WRITE is the region's to have (C10-74)
		{ib.AccessRemoteAtomic | ib.AccessRemoteRead | ib.AccessRemoteWrite, ""},
		{ib.AccessLocalWrite | ib.AccessRemoteWrite, ""}, // accepted, as rxe does
		{ib.AccessRemoteRead | ib.AccessRelaxedOrdering, ""},
		{ib.AccessRemoteRead | ib.AccessZeroBased, "ZERO_BASED not supported"},
		{ib.AccessMWBind, "MW_BIND not supported"},
		{ib.AccessRemoteRead | ib.AccessOnDemand, "ON_DEMAND not supported"},
		{ib.AccessRemoteRead | 0x40000000, "0x40000000 not supported"},
	} {
		err := tc.flags.ValidForMW()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: ValidForMW() = %v, want nil", tc.flags, err)
		case tc.wantErr != "" && !errors.Is(err, ib.ErrInvalidAccessFlags):
			t.Errorf("%v: ValidForMW() = %v, want ErrInvalidAccessFlags", tc.flags, err)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%v: ValidForMW() = %q, want it to say %q", tc.flags, err, tc.wantErr)
		}
	}
}

func TestMWType(t *testing.T) {
	for _, tc := range []struct {
		t     ib.MWType
		name  string
		valid bool
	}{
		{ib.MWType1, "IBV_MW_TYPE_1", true},
		{ib.MWType2, "IBV_MW_TYPE_2", true},
		{0, "MWType(0)", false},
		{3, "MWType(3)", false},
	} {
		if tc.t.String() != tc.name || tc.t.Valid() != tc.valid {
			t.Errorf("MWType(%d): %q valid %v, want %q %v", uint8(tc.t), tc.t, tc.t.Valid(), tc.name, tc.valid)
		}
	}
}
