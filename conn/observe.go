package conn

import (
	"errors"
	"net/netip"
	"sync"
)

// Observer sees the datagrams an observed Bind carries, such as a packet
// capture. Calls are serialised, so an Observer needs no lock of its own;
// it must not keep msgs or their buffers after it returns.
type Observer interface {
	// Sent is called with the datagrams a Send handed to the link, in
	// order, after the inner Send returned (so a link that fills
	// Message.IPID on send has done so). local is the Bind's address.
	Sent(local netip.AddrPort, msgs []Message)
	// Received is called with the datagrams a Recv returned.
	Received(local netip.AddrPort, msgs []Message)
}

// Observe returns a Bind that carries its datagrams over b and shows each
// one to o. It works the same over any link (a UDP socket or memconn).
//
// A Send holds the observer's lock while b sends, so a reply cannot be
// observed before the request that caused it: the observer sees one
// device's traffic in causal order. The price is that concurrent senders
// are serialised; observing is a debugging aid, not for the fast path.
//
// An observed Bind plans IPv4 IDs when b does (IPIDPlanner), so observing
// a GSO link does not turn its coalescing off, and the observer sees the
// IDs the datagrams carry on the wire. It opens no flows (FlowOpener): its
// datagrams all leave from the address the observer is shown.
func Observe(b Bind, o Observer) Bind {
	ob := &observed{Bind: b, o: o, local: b.LocalAddr()}
	if p, ok := b.(IPIDPlanner); ok {
		return &observedPlanner{observed: ob, IPIDPlanner: p}
	}
	return ob
}

// observedPlanner is an observed Bind over a link that plans IPv4 IDs.
type observedPlanner struct {
	*observed
	IPIDPlanner
}

// observed is the Bind Observe returns.
type observed struct {
	Bind
	o     Observer
	local netip.AddrPort
	mu    sync.Mutex // serialises calls to o, and Sends with them
}

func (b *observed) Send(msgs []Message) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.Bind.Send(msgs)
	if n > 0 {
		b.o.Sent(b.local, msgs[:n])
	}
	return n, err
}

func (b *observed) Recv(msgs []Message) (int, error) {
	n, err := b.Bind.Recv(msgs)
	if n > 0 {
		b.mu.Lock()
		b.o.Received(b.local, msgs[:n])
		b.mu.Unlock()
	}
	return n, err
}

// SetECN sets the ECN codepoint of the observed link's datagrams, if the
// link can (ECNSetter).
func (b *observed) SetECN(ecn uint8) error {
	if s, ok := b.Bind.(ECNSetter); ok {
		return s.SetECN(ecn)
	}
	return errors.ErrUnsupported
}
