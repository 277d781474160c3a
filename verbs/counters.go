package verbs

import (
	"strconv"

	"github.com/goverbs/goverbs/internal/engine"
)

// Counter names one of a device's counters (Device.Counters). A Counter
// prints as its name; the first thirteen carry the names of Linux rxe's
// hw_counters, so scripts that read `rdma statistic` read them alike.
type Counter int

// Device counters.
const (
	SentPkts            Counter = iota // sent_pkts: packets handed to the link
	RcvdPkts                           // rcvd_pkts: packets that passed the receive checks
	DuplicateRequest                   // duplicate_request: the responder saw a request again
	OutOfSeqRequest                    // out_of_seq_request: the responder saw a request PSN ahead of the expected one
	RcvdRNRErr                         // rcvd_rnr_err: the requester received an RNR NAK
	SendRNRErr                         // send_rnr_err: the responder sent an RNR NAK (no receive posted)
	RcvdSeqErr                         // rcvd_seq_err: the requester received a PSN sequence error NAK
	RetryExceededErr                   // retry_exceeded_err: the requester gave up after RetryCnt retries
	RetryRNRExceededErr                // retry_rnr_exceeded_err: the requester gave up after RNRRetry retries
	CompleterRetryErr                  // completer_retry_err: retransmissions started
	SendErr                            // send_err: the link refused a packet
	RDMASends                          // rdma_sends: SEND requests completed (not WRITE, READ, atomics)
	RDMARecvs                          // rdma_recvs: receive requests completed
	NAKSent                            // nak_sent: NAKs sent, other than RNR
	NAKRcvd                            // nak_rcvd: NAKs received, other than RNR
	ACKSent                            // ack_sent: ACKs sent
	LocalACKTimeout                    // local_ack_timeout_err: retransmit timer expiries
	CQOverflow                         // cq_overflow: completions lost to a full CQ
	RetransmittedPkts                  // retransmitted_pkts: packets sent again (go-back-N resends, READ re-requests, READ responses re-sent for a repeated READ)
	UDSendTooLong                      // ud_send_too_long: UD sends longer than the MTU, completed without sending anything (IBA C10-93.1.1)

	// The drop counters, one per reason a received packet is dropped
	// unanswered; Counters.Drops sums them.
	DropMalformed          // drop_malformed: failed the header checks
	DropBadICRC            // drop_bad_icrc: ICRC mismatch
	DropUnknownQP          // drop_unknown_qp: the destination QP does not exist
	DropQPState            // drop_qp_state: the QP's state does not accept the packet
	DropWrongTransport     // drop_wrong_transport: the opcode's transport is not the QP's
	DropBadPKey            // drop_bad_pkey: P_Key is not the default 0xFFFF
	DropWrongSource        // drop_wrong_source: a connected QP's packet not from its peer
	DropBadQKey            // drop_bad_qkey: a UD packet whose Q_Key is not the QP's
	DropRxOverflow         // drop_rx_overflow: the QP's inbound queue was full
	DropNoRecvWQE          // drop_no_recv_wqe: a UC or UD message found no receive request posted
	DropInvalidRequest     // drop_invalid_request: a UC or UD message the responder refused (too long for the receive buffer, bad length or opcode sequence, a WRITE the QP or rkey does not allow)
	DropUCIncomplete       // drop_uc_incomplete: UC packets of a message whose earlier packet was lost
	DropUnexpectedResponse // drop_unexpected_response: a response to no outstanding request
	DropDuplicateResponse  // drop_duplicate_response: a response for a PSN already completed

	// Congestion control (DeviceConfig.CongestionControl), with the names
	// of mlx5's counters.
	NpECNMarked  // np_ecn_marked_roce_packets: packets received marked congestion experienced
	NpCNPSent    // np_cnp_sent: CNPs sent in answer to them
	RpCNPHandled // rp_cnp_handled: CNPs received that lowered a QP's rate
	RpCNPIgnored // rp_cnp_ignored: CNPs received with congestion control off

	AsyncEventDropped // async_event_dropped: asynchronous events lost, nobody read them in time
)

// NumCounters is the number of counters; Counter values are 0..NumCounters−1.
// (Counters.Drops converts a snapshot to the engine's, which compiles only
// while the engine has as many.)
const NumCounters = 39

// String returns the counter's name ("sent_pkts"), or "Counter(n)" for a
// value that names no counter.
func (c Counter) String() string {
	if c < 0 || int(c) >= NumCounters {
		return "Counter(" + strconv.Itoa(int(c)) + ")"
	}
	return engine.Counter(c).String()
}

// Counters is a snapshot of a device's counters, indexed by Counter.
type Counters [NumCounters]uint64

// Get returns one counter of the snapshot.
func (s Counters) Get(c Counter) uint64 { return s[c] }

// Drops returns how many received packets were dropped, for any reason:
// the sum of the Drop… counters. A healthy link between two goverbs
// devices shows none; drops count packets, not failed work requests.
func (s Counters) Drops() uint64 { return engine.Counters(s).Drops() }
