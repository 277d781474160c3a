// Package engine is the software RDMA NIC: the device with its receive loop
// and timers, memory-region checks, completion queues, and reliable-connected
// queue pairs whose transport is cut, as in Linux rxe, into a requester
// (work requests → packets), a responder (request packets → memory, ACKs,
// read responses, atomics, receive completions) and a completer (responses →
// send completions, retransmission). See doc/design.md and doc/protocol.md
// at the repository root.
//
// # Ownership
//
// A QP's protocol state is touched only by the goroutine running its turn:
// whoever schedules the QP runs the turn inline when the QP is idle, or arms
// it for the running owner (see task.go); a post behind earlier work hands
// the turn to the device worker instead, so that many posts leave in one
// flush (PostSend). Posts, the receive loop and timers
// only append to the QP's lock-free rings and schedule it; the receive
// loop takes qp.mu only to grow a full inbound ring (Device.enqueue), and
// holds the device's receive gate while it queues, which a turn takes to
// shrink the ring of a quiet QP (shrink.go).
// Control operations (modify, destroy) take qp.mu, which a turn holds
// throughout.
package engine
