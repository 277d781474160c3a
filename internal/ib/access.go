package ib

import (
	"errors"
	"fmt"
)

// AccessFlags are the access rights of a memory region or of a QP's
// responder (enum ibv_access_flags, doc/protocol.md §12.1). Local read is always
// allowed and has no flag.
type AccessFlags uint32

// Access flags, with their libibverbs values.
const (
	AccessLocalWrite   AccessFlags = 0x1  // IBV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite  AccessFlags = 0x2  // IBV_ACCESS_REMOTE_WRITE
	AccessRemoteRead   AccessFlags = 0x4  // IBV_ACCESS_REMOTE_READ
	AccessRemoteAtomic AccessFlags = 0x8  // IBV_ACCESS_REMOTE_ATOMIC
	AccessMWBind       AccessFlags = 0x10 // IBV_ACCESS_MW_BIND
	AccessZeroBased    AccessFlags = 0x20 // IBV_ACCESS_ZERO_BASED
	AccessOnDemand     AccessFlags = 0x40 // IBV_ACCESS_ON_DEMAND
	AccessHugeTLB      AccessFlags = 0x80 // IBV_ACCESS_HUGETLB
	// AccessRelaxedOrdering (IBV_ACCESS_RELAXED_ORDERING) is the first flag
	// of the optional range: a hint a device may ignore, and we do.
	AccessRelaxedOrdering AccessFlags = 0x100000
)

const (
	// accessMR are the flags a memory region honours.
	accessMR = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessMWBind
	// AccessRemote are the rights a memory window grants (IBA 10.6.7.1):
	// windows are reached only through R_Keys.
	AccessRemote = AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	// accessMW are the flags a window bind accepts: the remote rights, and
	// LOCAL_WRITE, which rxe accepts and which means nothing for a window.
	accessMW = AccessRemote | AccessLocalWrite
	// accessOptional is IBV_ACCESS_OPTIONAL_RANGE (bits 20–29): flags a
	// device that does not know them accepts and ignores (rdma-core
	// ibv_reg_mr_iova2).
	accessOptional AccessFlags = 0x3ff00000
	// accessNeedLocalWrite are the flags that are only valid together with
	// AccessLocalWrite.
	accessNeedLocalWrite = AccessRemoteWrite | AccessRemoteAtomic
)

// ErrInvalidAccessFlags is returned, wrapped with the offending flags, for
// access flags a memory region cannot have.
var ErrInvalidAccessFlags = errors.New("invalid access flags")

var accessNames = []flagName{
	{uint32(AccessLocalWrite), "LOCAL_WRITE"},
	{uint32(AccessRemoteWrite), "REMOTE_WRITE"},
	{uint32(AccessRemoteRead), "REMOTE_READ"},
	{uint32(AccessRemoteAtomic), "REMOTE_ATOMIC"},
	{uint32(AccessMWBind), "MW_BIND"},
	{uint32(AccessZeroBased), "ZERO_BASED"},
	{uint32(AccessOnDemand), "ON_DEMAND"},
	{uint32(AccessHugeTLB), "HUGETLB"},
	{uint32(AccessRelaxedOrdering), "RELAXED_ORDERING"},
}

// String returns the flags as "LOCAL_WRITE|REMOTE_READ" (IBV_ACCESS_
// prefix dropped), unnamed bits as hex, and "0" for none.
func (a AccessFlags) String() string { return formatFlags(uint32(a), accessNames) }

// ValidForMR checks a as the access flags of a memory region
// (ibv_reg_mr, doc/protocol.md §12.1). It enforces the verbs rule that
// REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (linux
// ib_check_mr_access), and rejects what this NIC does not implement:
// ZERO_BASED, ON_DEMAND, HUGETLB and any other bit below the optional
// range. Flags of the optional range, RELAXED_ORDERING among
// them, are accepted and ignored. The error wraps ErrInvalidAccessFlags.
func (a AccessFlags) ValidForMR() error {
	if bad := a &^ (accessMR | accessOptional); bad != 0 {
		return fmt.Errorf("%w: %v not supported", ErrInvalidAccessFlags, bad)
	}
	if a&accessNeedLocalWrite != 0 && a&AccessLocalWrite == 0 {
		return fmt.Errorf("%w: %v requires LOCAL_WRITE", ErrInvalidAccessFlags, a&accessNeedLocalWrite)
	}
	return nil
}

// ValidForMW checks a as the access flags of a memory window bind
// (ibv_mw_bind_info.mw_access_flags, doc/protocol.md §12.5): the remote
// rights, LOCAL_WRITE (accepted and meaningless, as rxe has it) and the
// optional range. ZERO_BASED windows and every other flag are refused.
// Whether the region allows the rights is the bind's own check (C10-74).
// The error wraps ErrInvalidAccessFlags.
func (a AccessFlags) ValidForMW() error {
	if bad := a &^ (accessMW | accessOptional); bad != 0 {
		return fmt.Errorf("%w: %v not supported for a memory window", ErrInvalidAccessFlags, bad)
	}
	return nil
}
