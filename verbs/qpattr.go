package verbs

// QPCap are a queue pair's capacities (struct ibv_qp_cap): asked for in
// QPInitAttr.Cap, reported with the sizes as allocated by QP.Cap.
type QPCap struct {
	// MaxSendWR and MaxRecvWR are the depths of the send and receive
	// queues, 1..DeviceAttr.MaxQPWR; they are rounded up to a power of two.
	MaxSendWR, MaxRecvWR uint32
	// MaxSendSGE and MaxRecvSGE bound SendWR.SGList and RecvWR.SGList
	// (0 means 1), at most DeviceAttr.MaxSGE.
	MaxSendSGE, MaxRecvSGE uint32
	// MaxInlineData bounds the data of a SendInline request, at most
	// DeviceAttr.MaxInlineData.
	MaxInlineData uint32
}

// QPInitAttr describes a queue pair to create (struct ibv_qp_init_attr).
type QPInitAttr struct {
	// Type is the transport service: QPTypeRC, QPTypeUC or QPTypeUD.
	Type QPType
	// SendCQ and RecvCQ receive the completions of the send and receive
	// queues; both are required, may be the same CQ, and must belong to
	// the PD's device.
	SendCQ, RecvCQ *CQ
	// Cap are the queue capacities.
	Cap QPCap
	// SQSigAll makes every send work request generate a completion, as
	// if each had SendSignaled.
	SQSigAll bool
	// SRQ, if set, is the shared receive queue the QP takes its receive
	// requests from: Cap's receive sizes are then ignored, and PostRecv
	// on the QP fails with ErrInvalidArgument.
	SRQ *SRQ
}

// AHAttr is an address vector (struct ibv_ah_attr with its GRH): where a
// connected QP sends, or an address handle of UD sends (PD.CreateAH). On
// RoCE every packet carries a GRH, so IsGlobal must be set and DGID be
// the peer's GID; the rest may stay zero. Endpoint.AHAttr, QP.ConnectRC
// and QP.ConnectUC fill it in.
type AHAttr struct {
	// DGID is the peer's GID: its IP address (GIDFromAddr).
	DGID GID
	// FlowLabel is the IPv6 flow label (grh.flow_label).
	FlowLabel uint32
	// SGIDIndex is the index of the source GID; the port has one, 0.
	SGIDIndex uint8
	// HopLimit is the IP TTL or hop limit (grh.hop_limit).
	HopLimit uint8
	// TrafficClass is the IP traffic class (grh.traffic_class).
	TrafficClass uint8
	// IsGlobal says the GRH fields are valid; required on RoCE.
	IsGlobal bool
	// SL is the service level.
	SL uint8
	// PortNum is the local port, 1 (0 is taken as 1).
	PortNum uint8
	// DestPort is a goverbs extension: the peer device's UDP port
	// (Endpoint.Port), 0 meaning the RoCEv2 port 4791. It lets several
	// devices share one host.
	DestPort uint16
}

// QPAttr are the attributes of QP.Modify and QP.Query (struct
// ibv_qp_attr). Modify reads only those its mask names.
type QPAttr struct {
	// State is the state to move to (QPAttrState); CurState, with
	// QPAttrCurState, asserts the state the QP is in.
	State, CurState QPState
	// PathMTU is the path MTU, at most the port's active MTU (RTR).
	PathMTU MTU
	// QKey is a UD QP's queue key (INIT, and optional at later
	// transitions): received packets must carry it, and sends whose
	// SendWR.RemoteQKey has the high bit set carry it.
	QKey uint32
	// RQPSN is the first PSN expected from the peer (RTR), SQPSN the
	// first PSN sent (RTS): 24 bits each.
	RQPSN, SQPSN uint32
	// DestQPN is the peer's QP number (RTR).
	DestQPN QPN
	// AccessFlags are what the peer may do through this QP: remote
	// write, read, atomic (INIT).
	AccessFlags AccessFlags
	// Cap are the capacities (Query only; resizing is not supported).
	Cap QPCap
	// AH is the path to the peer (RTR, with QPAttrAV).
	AH AHAttr
	// PKeyIndex is the partition key index, 0.
	PKeyIndex uint16
	// MaxRdAtomic is how many RDMA READ and atomic requests this QP may
	// have outstanding (RTS); MaxDestRdAtomic how many it accepts from
	// the peer at once (RTR).
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	// MinRNRTimer is the RNR timer code sent in RNR NAKs (RTR), 0..31.
	MinRNRTimer uint8
	// PortNum is the port, 1 (INIT).
	PortNum uint8
	// Timeout is the local ACK timeout exponent: 4.096 µs × 2^Timeout, 0
	// meaning none (RTS).
	Timeout uint8
	// RetryCnt is how often a request is retransmitted for lack of an
	// answer before it fails with WCRetryExcErr (RTS), 0..7.
	RetryCnt uint8
	// RNRRetry is how often a request is retried after RNR NAKs before it
	// fails with WCRNRRetryExcErr (RTS); 7 means for ever.
	RNRRetry uint8
	// EnSQDAsyncNotify, with QPAttrEnSQDAsyncNotify at RTS → SQD, asks
	// for EventSQDrained on Device.AsyncEvents once the messages the send
	// queue had started are all complete (ibv_qp_attr.en_sqd_async_notify).
	EnSQDAsyncNotify bool
	// SQDraining, reported by Query and ignored by Modify, is true in SQD
	// while messages the send queue had started are still outstanding
	// (ibv_qp_attr.sq_draining); it turns false when EventSQDrained would
	// be raised.
	SQDraining bool
}
