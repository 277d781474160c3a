package engine

import "sync/atomic"

// Counter indexes the per-device counters. The first ones carry the names of
// Linux rxe's hw_counters so tools and scripts read them alike; the rest
// count drops by reason and protocol events rxe does not expose.
type Counter int

// Device counters.
const (
	SentPkts               Counter = iota // packets handed to the link
	RcvdPkts                              // packets accepted by the receive checks
	DuplicateRequest                      // responder saw a duplicate request
	OutOfSeqRequest                       // responder saw a request PSN ahead of expected
	RcvdRNRErr                            // requester received an RNR NAK
	SendRNRErr                            // responder sent an RNR NAK
	RcvdSeqErr                            // requester received a PSN-sequence NAK
	RetryExceededErr                      // requester gave up: retry_cnt exhausted
	RetryRNRExceededErr                   // requester gave up: rnr_retry exhausted
	CompleterRetryErr                     // requester retransmissions started
	SendErr                               // link refused a packet
	RDMASends                             // SEND work requests completed successfully (not WRITE, READ or atomics)
	RDMARecvs                             // receive work requests completed successfully
	NAKSent                               // NAKs sent (any code but RNR)
	NAKRcvd                               // NAKs received (any code but RNR)
	ACKSent                               // ACKs sent
	LocalACKTimeout                       // retransmit timer expiries
	CQOverflow                            // completions lost to a full CQ
	RetransmittedPkts                     // packets sent again: go-back-N resends, READ re-requests, re-sent READ responses
	UDSendTooLong                         // UD sends longer than the MTU, completed without a packet (C10-93.1.1)
	DropMalformed                         // failed wire validation
	DropBadICRC                           // ICRC mismatch
	DropUnknownQP                         // DestQP names no QP
	DropQPState                           // QP state does not accept the packet
	DropWrongTransport                    // opcode transport differs from the QP type
	DropBadPKey                           // P_Key does not match 0xFFFF
	DropWrongSource                       // RC/UC packet not from the QP's peer
	DropBadQKey                           // UD packet whose Q_Key is not the QP's
	DropRxOverflow                        // QP inbound queue full
	DropNoRecvWQE                         // UC/UD message with no receive WQE to take it
	DropInvalidRequest                    // UC/UD message the responder refused: length, opcode sequence, access
	DropUCIncomplete                      // UC packets of a message an earlier lost packet cut short
	DropUnexpectedResponse                // response that matches no outstanding request
	DropDuplicateResponse                 // response for an already completed PSN
	NpECNMarked                           // packets received marked congestion experienced (mlx5's name)
	NpCNPSent                             // CNPs sent in answer (mlx5's name)
	RpCNPHandled                          // CNPs received and acted on (mlx5's name)
	RpCNPIgnored                          // CNPs received with congestion control off (mlx5's name)
	AsyncEventDropped                     // asynchronous events lost: nobody read them in time
	numCounters
)

var counterNames = [numCounters]string{
	SentPkts:               "sent_pkts",
	RcvdPkts:               "rcvd_pkts",
	DuplicateRequest:       "duplicate_request",
	OutOfSeqRequest:        "out_of_seq_request",
	RcvdRNRErr:             "rcvd_rnr_err",
	SendRNRErr:             "send_rnr_err",
	RcvdSeqErr:             "rcvd_seq_err",
	RetryExceededErr:       "retry_exceeded_err",
	RetryRNRExceededErr:    "retry_rnr_exceeded_err",
	CompleterRetryErr:      "completer_retry_err",
	SendErr:                "send_err",
	RDMASends:              "rdma_sends",
	RDMARecvs:              "rdma_recvs",
	NAKSent:                "nak_sent",
	NAKRcvd:                "nak_rcvd",
	ACKSent:                "ack_sent",
	LocalACKTimeout:        "local_ack_timeout_err",
	CQOverflow:             "cq_overflow",
	RetransmittedPkts:      "retransmitted_pkts",
	UDSendTooLong:          "ud_send_too_long",
	DropMalformed:          "drop_malformed",
	DropBadICRC:            "drop_bad_icrc",
	DropUnknownQP:          "drop_unknown_qp",
	DropQPState:            "drop_qp_state",
	DropWrongTransport:     "drop_wrong_transport",
	DropBadPKey:            "drop_bad_pkey",
	DropWrongSource:        "drop_wrong_source",
	DropBadQKey:            "drop_bad_qkey",
	DropRxOverflow:         "drop_rx_overflow",
	DropNoRecvWQE:          "drop_no_recv_wqe",
	DropInvalidRequest:     "drop_invalid_request",
	DropUCIncomplete:       "drop_uc_incomplete",
	DropUnexpectedResponse: "drop_unexpected_response",
	DropDuplicateResponse:  "drop_duplicate_response",
	NpECNMarked:            "np_ecn_marked_roce_packets",
	NpCNPSent:              "np_cnp_sent",
	RpCNPHandled:           "rp_cnp_handled",
	RpCNPIgnored:           "rp_cnp_ignored",
	AsyncEventDropped:      "async_event_dropped",
}

// String returns the counter's name, as in rxe's hw_counters where rxe has
// the counter.
func (c Counter) String() string { return counterNames[c] }

// NumCounters is the number of counters.
const NumCounters = int(numCounters)

// counters is a fixed, enum-indexed array, safe for concurrent increments.
type counters [numCounters]atomic.Uint64

func (c *counters) inc(i Counter)           { c[i].Add(1) }
func (c *counters) add(i Counter, n uint64) { c[i].Add(n) }
func (c *counters) snapshot() (s [numCounters]uint64) {
	for i := range c {
		s[i] = c[i].Load()
	}
	return s
}

// Counters is a snapshot of a device's counters, indexed by Counter.
type Counters [numCounters]uint64

// Get returns one counter of the snapshot.
func (s Counters) Get(c Counter) uint64 { return s[c] }

// Drops returns the sum of the drop counters.
func (s Counters) Drops() uint64 {
	var n uint64
	for c := DropMalformed; c <= DropDuplicateResponse; c++ {
		n += s[c]
	}
	return n
}
