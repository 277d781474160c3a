//go:build race

package conn

import "sync/atomic"

// kernelSync stands in, for the race detector, for the synchronisation the
// kernel provides between a send and the receive of the same datagram: the
// detector cannot see through the socket, and so reports as races the
// accesses RDMA makes on purpose across it (data written before a WRITE is
// sent, read after its completion arrived). Only race builds have it.
var kernelSync atomic.Uint64

// raceRelease publishes the sender's memory writes.
func raceRelease() { kernelSync.Add(1) }

// raceAcquire makes writes published before the datagrams arrived visible.
func raceAcquire() { kernelSync.Load() }
