package ib

// QPAttrMask selects the attributes a modify-QP call sets (enum
// ibv_qp_attr_mask, doc/protocol.md §11.3). Which ones each transition requires
// and accepts is CheckTransition's table (§11.4).
type QPAttrMask uint32

// QP attribute mask bits, with their libibverbs values.
const (
	QPAttrState            QPAttrMask = 0x1       // IBV_QP_STATE
	QPAttrCurState         QPAttrMask = 0x2       // IBV_QP_CUR_STATE
	QPAttrEnSQDAsyncNotify QPAttrMask = 0x4       // IBV_QP_EN_SQD_ASYNC_NOTIFY
	QPAttrAccessFlags      QPAttrMask = 0x8       // IBV_QP_ACCESS_FLAGS
	QPAttrPKeyIndex        QPAttrMask = 0x10      // IBV_QP_PKEY_INDEX
	QPAttrPort             QPAttrMask = 0x20      // IBV_QP_PORT
	QPAttrQKey             QPAttrMask = 0x40      // IBV_QP_QKEY
	QPAttrAV               QPAttrMask = 0x80      // IBV_QP_AV
	QPAttrPathMTU          QPAttrMask = 0x100     // IBV_QP_PATH_MTU
	QPAttrTimeout          QPAttrMask = 0x200     // IBV_QP_TIMEOUT
	QPAttrRetryCnt         QPAttrMask = 0x400     // IBV_QP_RETRY_CNT
	QPAttrRNRRetry         QPAttrMask = 0x800     // IBV_QP_RNR_RETRY
	QPAttrRQPSN            QPAttrMask = 0x1000    // IBV_QP_RQ_PSN
	QPAttrMaxQPRdAtomic    QPAttrMask = 0x2000    // IBV_QP_MAX_QP_RD_ATOMIC
	QPAttrAltPath          QPAttrMask = 0x4000    // IBV_QP_ALT_PATH
	QPAttrMinRNRTimer      QPAttrMask = 0x8000    // IBV_QP_MIN_RNR_TIMER
	QPAttrSQPSN            QPAttrMask = 0x10000   // IBV_QP_SQ_PSN
	QPAttrMaxDestRdAtomic  QPAttrMask = 0x20000   // IBV_QP_MAX_DEST_RD_ATOMIC
	QPAttrPathMigState     QPAttrMask = 0x40000   // IBV_QP_PATH_MIG_STATE
	QPAttrCap              QPAttrMask = 0x80000   // IBV_QP_CAP
	QPAttrDestQPN          QPAttrMask = 0x100000  // IBV_QP_DEST_QPN
	QPAttrRateLimit        QPAttrMask = 0x2000000 // IBV_QP_RATE_LIMIT
)

var qpAttrNames = []flagName{
	{uint32(QPAttrState), "STATE"},
	{uint32(QPAttrCurState), "CUR_STATE"},
	{uint32(QPAttrEnSQDAsyncNotify), "EN_SQD_ASYNC_NOTIFY"},
	{uint32(QPAttrAccessFlags), "ACCESS_FLAGS"},
	{uint32(QPAttrPKeyIndex), "PKEY_INDEX"},
	{uint32(QPAttrPort), "PORT"},
	{uint32(QPAttrQKey), "QKEY"},
	{uint32(QPAttrAV), "AV"},
	{uint32(QPAttrPathMTU), "PATH_MTU"},
	{uint32(QPAttrTimeout), "TIMEOUT"},
	{uint32(QPAttrRetryCnt), "RETRY_CNT"},
	{uint32(QPAttrRNRRetry), "RNR_RETRY"},
	{uint32(QPAttrRQPSN), "RQ_PSN"},
	{uint32(QPAttrMaxQPRdAtomic), "MAX_QP_RD_ATOMIC"},
	{uint32(QPAttrAltPath), "ALT_PATH"},
	{uint32(QPAttrMinRNRTimer), "MIN_RNR_TIMER"},
	{uint32(QPAttrSQPSN), "SQ_PSN"},
	{uint32(QPAttrMaxDestRdAtomic), "MAX_DEST_RD_ATOMIC"},
	{uint32(QPAttrPathMigState), "PATH_MIG_STATE"},
	{uint32(QPAttrCap), "CAP"},
	{uint32(QPAttrDestQPN), "DEST_QPN"},
	{uint32(QPAttrRateLimit), "RATE_LIMIT"},
}

// String returns the mask as "STATE|AV|PATH_MTU" (IBV_QP_ prefix dropped),
// unnamed bits as hex, and "0" for none.
func (m QPAttrMask) String() string { return formatFlags(uint32(m), qpAttrNames) }
