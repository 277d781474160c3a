// Package verbs is the goverbs RDMA API: the libibverbs programming model
// in Go, backed by a software RDMA NIC that speaks RoCEv2.
//
// The flow is the one RDMA programmers know: open a [Device], allocate a
// protection domain ([Device.AllocPD]), register memory ([PD.RegMR], or
// [AllocBuffer] for page-aligned memory outside the Go heap), create
// completion queues ([Device.CreateCQ]) and a reliable-connected queue pair
// ([PD.CreateQP]), move it through INIT, RTR and RTS with [QP.Modify] using
// the peer's QP number, PSN and GID (or [QP.ConnectRC] with its
// [Endpoint]), then post work requests ([QP.PostSend], [QP.PostRecv]) and
// poll completions ([CQ.Poll], [CQ.Wait]). Unreliable connected QPs
// ([QPTypeUC], [QP.ConnectUC]) send without ACKs or resends; unreliable
// datagram QPs ([QPTypeUD], [QP.ReadyUD]) send each message to the address
// handle ([PD.CreateAH]) its work request names, and receive it behind the
// 40-byte network header. QPs may share one receive
// queue ([PD.CreateSRQ], [QPInitAttr].SRQ); what concerns no work request,
// a QP gone to the error state or an SRQ running low, arrives on
// [Device.AsyncEvents].
//
// Names follow libibverbs: struct ibv_send_wr is [SendWR], IBV_WC_SUCCESS
// is [WCSuccess] with the same value, ibv_dereg_mr is [MR.Close].
//
// Control-path verbs return Go errors that say which verb failed and why
// and wrap one of the sentinels listed with [ErrInvalidArgument], for
// errors.Is. Posting fails only for immediate faults (queue full, bad
// opcode, QP state), with a [PostError]. Everything else arrives as a work
// completion whose [WCStatus] prints like ibv_wc_status_str.
//
// The verbs may be called from several goroutines at once, as
// libibverbs' functions may be from several threads: posts to one queue
// take their place in the order the calls reach it, and any goroutine may
// poll or wait on a CQ. The NIC itself is goroutines of this process;
// waiting on a CQ (CQ.Wait, or CQ.Poll in a loop, which receives for the
// device when it finds nothing) gives them the processor they need.
//
// Every object has Close, with libibverbs' order rules: closing a PD with
// open MRs, MWs, QPs, SRQs or AHs, or a CQ or SRQ a QP uses, fails with
// [ErrBusy]; closing twice returns nil; other use of a closed object fails
// with [ErrClosed]. Closing the Device flushes the work its QPs hold (see
// [Device]).
//
// Whole programs to start from are the package's examples, which run as
// tests (example_test.go and the example_*_test.go files beside it;
// pkg.go.dev shows them with the documentation): Example_send
// (SEND and RECV on connected QPs), Example_oneSided (RDMA WRITE and
// READ), Example_lifecycle, Example_deviceClose, Example_datagram (UD) and
// Example_sharedReceiveQueue.
package verbs
