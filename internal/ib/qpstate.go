package ib

// QPState is the state of a queue pair (enum ibv_qp_state, IBA 10.3.1,
// doc/protocol.md §11.1). Which states post receive and post send are allowed in,
// and what the QP sends and accepts in each, is the table of §11.1;
// CheckTransition says how a QP moves between them.
type QPState uint8

// QP states, with their libibverbs values.
const (
	QPStateReset QPState = 0 // IBV_QPS_RESET
	QPStateInit  QPState = 1 // IBV_QPS_INIT
	QPStateRTR   QPState = 2 // IBV_QPS_RTR, ready to receive
	QPStateRTS   QPState = 3 // IBV_QPS_RTS, ready to send
	QPStateSQD   QPState = 4 // IBV_QPS_SQD, send queue drain
	QPStateSQE   QPState = 5 // IBV_QPS_SQE, send queue error (UC and UD)
	QPStateErr   QPState = 6 // IBV_QPS_ERR

	numQPStates = 7
)

var qpStateNames = [numQPStates]string{
	QPStateReset: "RESET",
	QPStateInit:  "INIT",
	QPStateRTR:   "RTR",
	QPStateRTS:   "RTS",
	QPStateSQD:   "SQD",
	QPStateSQE:   "SQE",
	QPStateErr:   "ERR",
}

// String returns the state's name as the specification writes it
// ("RESET", "RTS", "ERR"), or "QPState(n)".
func (s QPState) String() string { return enumString(qpStateNames[:], uint8(s), "QPState") }
