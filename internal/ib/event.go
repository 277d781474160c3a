package ib

// EventType is the kind of an asynchronous event (enum ibv_event_type; IBA
// 11.6.3): affiliated events name a QP, CQ or SRQ, unaffiliated ones the
// port or the device.
type EventType uint8

// Event types, with their libibverbs values.
const (
	EventCQErr            EventType = 0  // IBV_EVENT_CQ_ERR: completions lost to a full CQ
	EventQPFatal          EventType = 1  // IBV_EVENT_QP_FATAL: the QP went to the error state
	EventQPReqErr         EventType = 2  // IBV_EVENT_QP_REQ_ERR: invalid request received (NAK invalid request)
	EventQPAccessErr      EventType = 3  // IBV_EVENT_QP_ACCESS_ERR: remote access violation received
	EventCommEst          EventType = 4  // IBV_EVENT_COMM_EST: first packet received in RTR
	EventSQDrained        EventType = 5  // IBV_EVENT_SQ_DRAINED
	EventPathMig          EventType = 6  // IBV_EVENT_PATH_MIG
	EventPathMigErr       EventType = 7  // IBV_EVENT_PATH_MIG_ERR
	EventDeviceFatal      EventType = 8  // IBV_EVENT_DEVICE_FATAL: the link is gone
	EventPortActive       EventType = 9  // IBV_EVENT_PORT_ACTIVE
	EventPortErr          EventType = 10 // IBV_EVENT_PORT_ERR
	EventLIDChange        EventType = 11 // IBV_EVENT_LID_CHANGE
	EventPKeyChange       EventType = 12 // IBV_EVENT_PKEY_CHANGE
	EventSMChange         EventType = 13 // IBV_EVENT_SM_CHANGE
	EventSRQErr           EventType = 14 // IBV_EVENT_SRQ_ERR
	EventSRQLimitReached  EventType = 15 // IBV_EVENT_SRQ_LIMIT_REACHED: fewer WQEs than the armed limit
	EventQPLastWQEReached EventType = 16 // IBV_EVENT_QP_LAST_WQE_REACHED: a QP on an SRQ takes no more WQEs
	EventClientReregister EventType = 17 // IBV_EVENT_CLIENT_REREGISTER
	EventGIDChange        EventType = 18 // IBV_EVENT_GID_CHANGE
	EventWQFatal          EventType = 19 // IBV_EVENT_WQ_FATAL
)

// eventNames are ibv_event_type_str's strings.
var eventNames = [...]string{
	EventCQErr:            "CQ error",
	EventQPFatal:          "local work queue catastrophic error",
	EventQPReqErr:         "invalid request local work queue error",
	EventQPAccessErr:      "local access violation work queue error",
	EventCommEst:          "communication established",
	EventSQDrained:        "send queue drained",
	EventPathMig:          "path migrated",
	EventPathMigErr:       "path migration request error",
	EventDeviceFatal:      "local catastrophic error",
	EventPortActive:       "port active",
	EventPortErr:          "port error",
	EventLIDChange:        "LID change",
	EventPKeyChange:       "P_Key change",
	EventSMChange:         "SM change",
	EventSRQErr:           "SRQ catastrophic error",
	EventSRQLimitReached:  "SRQ limit reached",
	EventQPLastWQEReached: "last WQE reached",
	EventClientReregister: "client reregistration",
	EventGIDChange:        "GID table change",
	EventWQFatal:          "WQ fatal",
}

// String returns ibv_event_type_str's text, or "EventType(n)".
func (e EventType) String() string { return enumString(eventNames[:], uint8(e), "EventType") }

// SRQAttrMask selects the attributes of an SRQ modify (enum
// ibv_srq_attr_mask).
type SRQAttrMask uint8

// SRQ attribute mask bits, with their libibverbs values.
const (
	SRQMaxWR SRQAttrMask = 1 << 0 // IBV_SRQ_MAX_WR: resize
	SRQLimit SRQAttrMask = 1 << 1 // IBV_SRQ_LIMIT: arm the limit event
)
