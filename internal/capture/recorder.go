package capture

import (
	"io"
	"net/netip"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/wire"
)

// Recorder is a conn.Observer that writes every datagram a device sends
// and receives to a pcap stream. Wrap a device's link in it with
// conn.Observe; the conn decorator serialises its calls. It is a debugging
// aid: it allocates nothing per frame but writes synchronously.
type Recorder struct {
	w     *Writer
	err   error  // the first write error; recording stops after it
	whole []byte // a sent datagram in parts (Body, Tail), laid end to end
}

// NewRecorder writes the pcap file header to w and returns a Recorder.
func NewRecorder(w io.Writer) (*Recorder, error) {
	cw, err := NewWriter(w)
	if err != nil {
		return nil, err
	}
	return &Recorder{w: cw}, nil
}

// Err returns the first error writing the capture, after which the
// Recorder dropped every frame.
func (r *Recorder) Err() error { return r.err }

// Sent records datagrams sent from local. A message that carries the IPv4
// Identification it goes out with (HasIPID) is written with it; otherwise
// with 0, which a Linux socket writes into a DF-marked datagram and the
// engine seals into the ICRC (doc/protocol.md §ICRC).
func (r *Recorder) Sent(local netip.AddrPort, msgs []conn.Message) {
	now := time.Now()
	for i := range msgs {
		m := &msgs[i]
		env := envelope(local, m.Addr)
		if m.HasIPID {
			env.IPID = m.IPID
		}
		d := m.Buf
		if len(m.Body)+len(m.Tail) > 0 {
			r.whole = m.AppendDatagram(r.whole[:0])
			d = r.whole
		}
		r.record(now, &env, d)
	}
}

// Received records datagrams that arrived at local.
func (r *Recorder) Received(local netip.AddrPort, msgs []conn.Message) {
	now := time.Now()
	for i := range msgs {
		m := &msgs[i]
		env := envelope(m.Addr, local)
		env.IPID = m.IPID
		p := wire.Packet(m.Buf[:m.N])
		if !m.HasIPID && env.IPv4() && p.CheckICRC(&env) != nil {
			// A UDP socket hides the IPv4 ID; write the one the ICRC
			// implies, so the capture shows what was on the wire.
			if id, err := p.CheckICRCAnyIPID(&env); err == nil {
				env.IPID = id
			}
		}
		r.record(now, &env, p)
	}
}

// envelope describes a datagram from src to dst as the engine sends it:
// DF set, as a RoCEv2 sender must not have its packets fragmented.
func envelope(src, dst netip.AddrPort) wire.Envelope {
	return wire.Envelope{Src: src.Addr().Unmap(), Dst: dst.Addr().Unmap(), FlagsFragment: wire.FlagDontFragment,
		SrcPort: src.Port(), DstPort: dst.Port()}
}

func (r *Recorder) record(now time.Time, env *wire.Envelope, p []byte) {
	if r.err != nil {
		return
	}
	f := Frame{Time: now, Envelope: *env, Packet: wire.Packet(p)}
	r.err = r.w.WriteFrame(&f)
}
