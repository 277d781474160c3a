package verbs

import "github.com/goverbs/goverbs/internal/ib"

// ConnectOptions are the attributes ConnectRC sets; start from
// DefaultConnectOptions.
type ConnectOptions struct {
	// Access is what the peer may do to this QP's memory.
	Access AccessFlags
	// PathMTU 0 means the port's active MTU.
	PathMTU MTU
	// The rest are the QPAttr fields of the same names.
	Timeout         uint8 // local ACK timeout exponent: 4.096 µs × 2^Timeout; 0 = none
	RetryCnt        uint8
	RNRRetry        uint8 // 7 = retry forever
	MinRNRTimer     uint8 // RNR timer code sent in RNR NAKs
	MaxRdAtomic     uint8 // READ/atomic requests this QP may have outstanding
	MaxDestRdAtomic uint8 // READ/atomic requests it accepts at once
}

// DefaultConnectOptions returns the attributes ibv_rc_pingpong uses
// (timeout 14 ≈ 67 ms, 7 retries, RNR timer 12 = 0.64 ms), with every
// remote access allowed and 16 outstanding READs/atomics each way. The
// QP's access flags are only the first gate: a remote READ, WRITE or
// atomic also needs an MR registered with that access and its rkey; set
// Access to less when the peer is not to have any of them at all.
func DefaultConnectOptions() ConnectOptions {
	return ConnectOptions{
		Access:  AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic,
		Timeout: 14, RetryCnt: 7, RNRRetry: 7, MinRNRTimer: 12,
		MaxRdAtomic: 16, MaxDestRdAtomic: 16,
	}
}

// AHAttr is the address vector that reaches the endpoint's device: for an
// address handle of UD sends to it (PD.CreateAH).
func (e Endpoint) AHAttr() AHAttr {
	return AHAttr{IsGlobal: true, DGID: e.GID, HopLimit: 64, PortNum: 1, DestPort: e.Port}
}

// ConnectRC moves an RC QP in RESET through INIT, RTR and RTS so that it
// talks to remote, sending from PSN localPSN (QP.Endpoint says how to
// choose it). A QP already in INIT, moved there to post receives before
// the peer can send with
//
//	qp.Modify(&verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, AccessFlags: access},
//		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
//
// is connected the same way, its access flags set again from o.Access. The
// steps stop at the first that fails, which the error names; the QP stays
// in the state the steps before it reached.
func (qp *QP) ConnectRC(localPSN uint32, remote Endpoint, o ConnectOptions) error {
	return qp.modifySteps("connect RC", QPTypeRC, []modifyStep{
		{QPAttr{State: QPStateInit, PortNum: 1, AccessFlags: o.Access},
			QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		{QPAttr{State: QPStateRTR, PathMTU: qp.pathMTU(o.PathMTU), DestQPN: remote.QPN, RQPSN: remote.PSN,
			MaxDestRdAtomic: o.MaxDestRdAtomic, MinRNRTimer: o.MinRNRTimer, AH: remote.AHAttr()},
			QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer},
		{QPAttr{State: QPStateRTS, SQPSN: localPSN, Timeout: o.Timeout, RetryCnt: o.RetryCnt,
			RNRRetry: o.RNRRetry, MaxRdAtomic: o.MaxRdAtomic},
			QPAttrState | QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic},
	})
}

// ConnectUC moves a UC QP in RESET (or INIT) through INIT, RTR and RTS so
// that it talks to remote, sending from PSN localPSN, as ConnectRC does.
// Of the options only Access and PathMTU apply: UC has no ACKs, retries or
// READs.
func (qp *QP) ConnectUC(localPSN uint32, remote Endpoint, o ConnectOptions) error {
	return qp.modifySteps("connect UC", QPTypeUC, []modifyStep{
		{QPAttr{State: QPStateInit, PortNum: 1, AccessFlags: o.Access},
			QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
		{QPAttr{State: QPStateRTR, PathMTU: qp.pathMTU(o.PathMTU), DestQPN: remote.QPN, RQPSN: remote.PSN,
			AH: remote.AHAttr()},
			QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN},
		{QPAttr{State: QPStateRTS, SQPSN: localPSN}, QPAttrState | QPAttrSQPSN},
	})
}

// ReadyUD moves a UD QP in RESET through INIT, RTR and RTS: it then
// receives the packets that carry qkey and sends from PSN psn, each send
// to the address handle and QP its work request names.
func (qp *QP) ReadyUD(qkey, psn uint32) error {
	return qp.modifySteps("ready UD", QPTypeUD, []modifyStep{
		{QPAttr{State: QPStateInit, PortNum: 1, QKey: qkey}, QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		{QPAttr{State: QPStateRTR}, QPAttrState},
		{QPAttr{State: QPStateRTS, SQPSN: psn}, QPAttrState | QPAttrSQPSN},
	})
}

// readyCall names the call that readies a QP of each type.
var readyCall = map[QPType]string{QPTypeRC: "ConnectRC", QPTypeUC: "ConnectUC", QPTypeUD: "ReadyUD"}

// modifyStep is one modify of a sequence.
type modifyStep struct {
	attr QPAttr
	mask QPAttrMask
}

// modifySteps makes the modifies in turn, stopping at the first that
// fails, which the error of verb names. A QP not of type typ is refused
// first, with the call that readies its type.
func (qp *QP) modifySteps(verb string, typ QPType, steps []modifyStep) error {
	if t := qp.Type(); t != typ {
		return errorf(verb, "%w: QP 0x%06x is a %v QP, which %s readies", ErrInvalidArgument, uint32(qp.QPN()), t, readyCall[t])
	}
	for _, s := range steps {
		if err := qp.e.Modify(engineQPAttr(&s.attr), ib.QPAttrMask(s.mask)); err != nil {
			return errorf(verb, "QP 0x%06x to %v: %w", uint32(qp.QPN()), s.attr.State, err)
		}
	}
	return nil
}

// pathMTU returns mtu, or the port's active MTU for 0.
func (qp *QP) pathMTU(mtu MTU) MTU {
	if mtu == 0 {
		p, _ := qp.pd.dev.QueryPort(1)
		mtu = p.ActiveMTU
	}
	return mtu
}
