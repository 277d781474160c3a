package memconn

import "sync/atomic"

// Stats is a snapshot of a Network's counters. Every datagram sent or
// copied is accounted for once it has left the delay queue:
//
//	Sent + Duplicated = Delivered + Dropped.Loss + Dropped.Overflow +
//	                    Dropped.NoReceiver + Dropped.Filter
//
// Dropped.Truncated is counted later, at Recv, out of Delivered.
type Stats struct {
	Sent       uint64 // datagrams accepted by Send
	Delivered  uint64 // datagrams put into an inbox, copies included
	Dropped    Drops
	Duplicated uint64 // extra copies made, by Duplicate or by the filter
	Corrupted  uint64 // datagrams with a bit flipped
	Reordered  uint64 // datagrams held back by ReorderDelay
	Marked     uint64 // ECN-capable datagrams marked congestion experienced
}

// Drops counts dropped datagrams by reason.
type Drops struct {
	Loss       uint64 // lost by the Loss impairment
	Overflow   uint64 // the destination inbox was full
	NoReceiver uint64 // no bind at the destination (or it closed)
	Filter     uint64 // dropped by the filter
	Truncated  uint64 // larger than the Recv buffer offered for it
}

// Total returns the number of datagrams dropped for any reason.
func (d Drops) Total() uint64 {
	return d.Loss + d.Overflow + d.NoReceiver + d.Filter + d.Truncated
}

// counter indexes the fabric's counter array.
type counter int

const (
	cSent counter = iota
	cDelivered
	cDropLoss
	cDropOverflow
	cDropNoReceiver
	cDropFilter
	cDropTruncated
	cDuplicated
	cCorrupted
	cReordered
	cMarked
	numCounters
)

// counters is a fixed, enum-indexed array of atomics: senders on many
// goroutines count without a shared lock.
type counters [numCounters]atomic.Uint64

func (c *counters) inc(i counter)           { c[i].Add(1) }
func (c *counters) add(i counter, n uint64) { c[i].Add(n) }

func (c *counters) snapshot() Stats {
	return Stats{
		Sent:      c[cSent].Load(),
		Delivered: c[cDelivered].Load(),
		Dropped: Drops{
			Loss:       c[cDropLoss].Load(),
			Overflow:   c[cDropOverflow].Load(),
			NoReceiver: c[cDropNoReceiver].Load(),
			Filter:     c[cDropFilter].Load(),
			Truncated:  c[cDropTruncated].Load(),
		},
		Duplicated: c[cDuplicated].Load(),
		Corrupted:  c[cCorrupted].Load(),
		Reordered:  c[cReordered].Load(),
		Marked:     c[cMarked].Load(),
	}
}
