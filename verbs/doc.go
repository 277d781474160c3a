// Package verbs is the goverbs RDMA API: the libibverbs programming model
// in Go, backed by a software RDMA NIC that speaks RoCEv2.
//
// The flow is the one RDMA programmers know: open a [Device], allocate a
// protection domain ([Device.AllocPD]), register memory ([PD.RegMR], or
// [AllocBuffer] for page-aligned memory outside the Go heap), create
// completion queues ([Device.CreateCQ]) and a reliable-connected queue pair
// ([PD.CreateQP]), move it through INIT, RTR and RTS with [QP.Modify] using
// the peer's QP number, PSN and GID, then post work requests
// ([QP.PostSend], [QP.PostRecv]) and poll completions ([CQ.Poll]).
//
// Control-path verbs return Go errors wrapped with the verb's name; posting
// fails only for immediate faults (queue full, bad opcode, QP state).
// Everything else arrives as a work completion whose [WCStatus] prints like
// ibv_wc_status_str.
package verbs
