package perftest

// Verb is the operation a test measures (perftest's enum order).
type Verb int

// The verbs of the eight tests.
const (
	Send Verb = iota
	Write
	Read
	Atomic
)

// String is the name perftest prints in the test title.
func (v Verb) String() string {
	return [...]string{"Send", "RDMA_Write", "RDMA_Read", "Atomic"}[v]
}

// rdma reports whether the verb targets the peer's memory directly, so its
// connection lines show the RKey and VAddr.
func (v Verb) rdma() bool { return v == Write || v == Read }

// readLike reports whether the verb needs responder resources: the READ
// and atomic tests advertise out_reads and are not halved in latency.
func (v Verb) readLike() bool { return v == Read || v == Atomic }

// Test is one of the eight tools: a verb measured for bandwidth or latency.
type Test struct {
	Verb Verb
	Lat  bool
}

// Tests maps the perftest tool names to what they measure.
var Tests = map[string]Test{
	"ib_send_bw":    {Send, false},
	"ib_send_lat":   {Send, true},
	"ib_write_bw":   {Write, false},
	"ib_write_lat":  {Write, true},
	"ib_read_bw":    {Read, false},
	"ib_read_lat":   {Read, true},
	"ib_atomic_bw":  {Atomic, false},
	"ib_atomic_lat": {Atomic, true},
}

// AtomicType is the atomic operation of the atomic tests (-A).
type AtomicType int

// The atomic operations, in perftest's enum order.
const (
	CmpAndSwap AtomicType = iota
	FetchAndAdd
)

func (a AtomicType) String() string {
	if a == CmpAndSwap {
		return "CMP_AND_SWAP"
	}
	return "FETCH_AND_ADD"
}
