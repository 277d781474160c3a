package engine

import "github.com/goverbs/goverbs/internal/wire"

// repeatRead answers a READ asked again (doc/protocol.md §7.6) from psn,
// for length bytes at va, of responder resource i. Requesters ask again
// for what they lost in two ways: goverbs for the part of one READ it
// misses (doc/protocol.md §8.3), a go-back-N requester like rxe for the
// rest of that READ and every READ after it. So that both get each
// response once, and soon:
//
//   - a stream of the READ that is still to send all that is asked makes
//     the request redundant: it was asked too early, and is dropped;
//   - the READ's streams that it covers are dropped, as it sends their
//     responses;
//   - it goes before the READs not asked again — the requester waits for
//     it, and a go-back-N one drops everything else until it comes — and
//     among those asked again in PSN order, as all responses go: a copy
//     of an old ask that a network delayed, queued behind a stream asked
//     again and again while paced, never ran, and held back the answers
//     to the duplicates after it; the stream it overtakes resumes after
//     it;
//   - asking for paceLossRun responses or more, sent since the last loss
//     signal, is a new one, which backs the pacer off at the next turn;
//     asking for ones sent before is that loss seen again, and asking for
//     fewer is a loss on the path, not a requester falling behind.
func (qp *QP) repeatRead(i int, va uint64, rkey, length uint32, psn wire.PSN) respOutcome {
	r := &qp.resp
	end := psn.Add(max(1, (length+qp.mtu-1)/qp.mtu) - 1)
	if r.read.willSend(i, psn, end) {
		return respDupDrop
	}
	for k := range r.readQ.n {
		if r.readQ.q[k].willSend(i, psn, end) {
			return respDupDrop
		}
	}
	if res := &r.res[i]; res.sent && res.sentIn == r.sent.epoch && end.Diff(psn) >= paceLossRun-1 {
		r.sent.epoch++
		r.sent.loss, r.sent.lossPSN = true, psn
	}
	for k := r.readQ.n - 1; k >= 0; k-- {
		if r.readQ.q[k].within(i, psn, end) {
			r.readQ.remove(k)
		}
	}
	if r.read.within(i, psn, end) {
		r.read.active = false
	}
	s := readStream{active: true, repeat: true, res: i, end: end, va: va, rkey: rkey, length: length,
		psn: psn, reqPSN: psn, msn: r.msn}
	switch {
	case !r.read.active:
		qp.sendPendingACK()
		r.read = s
	case !r.read.repeat || psn.Less(r.read.psn):
		cur := r.read
		r.readQ.insert(0, &cur)
		r.read = s
	default:
		k := 0
		for k < r.readQ.n && r.readQ.q[k].repeat && r.readQ.q[k].psn.Less(psn) {
			k++
		}
		r.readQ.insert(k, &s)
	}
	return respDupRead
}

// willSend reports whether s, a stream of resource i, is still to send
// every response from psn to end.
func (s *readStream) willSend(i int, psn, end wire.PSN) bool {
	return s.active && s.res == i && s.psn.LessEq(psn) && end.LessEq(s.end)
}

// within reports whether every response s, a stream of resource i, is
// still to send lies from psn to end.
func (s *readStream) within(i int, psn, end wire.PSN) bool {
	return s.active && s.res == i && psn.LessEq(s.psn) && s.end.LessEq(end)
}
