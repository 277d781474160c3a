package engine

import (
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/internal/capture"
	"github.com/goverbs/goverbs/internal/wire"
)

// tap writes every packet a device sends and receives to a pcap stream,
// framed in Ethernet/IP/UDP so Wireshark decodes it as RoCEv2. It is a
// debugging aid: it serialises the data path and allocates.
type tap struct {
	mu  sync.Mutex
	w   *capture.Writer
	err error // the first write error; capture stops after it
}

func newTap(w io.Writer) (*tap, error) {
	cw, err := capture.NewWriter(w)
	if err != nil {
		return nil, err
	}
	return &tap{w: cw}, nil
}

// record appends one packet; env describes its datagram.
func (t *tap) record(env *wire.Envelope, p []byte) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	t.err = t.w.WriteFrame(&capture.Frame{Time: time.Now(), Envelope: *env, Packet: wire.Packet(p)})
}

// recordReceived records a datagram the link delivered to local.
func (t *tap) recordReceived(m *conn.Message, local netip.AddrPort) {
	if t == nil {
		return
	}
	env := wire.Envelope{Src: m.Addr.Addr(), Dst: local.Addr(), IPID: m.IPID,
		FlagsFragment: wire.FlagDontFragment, SrcPort: m.Addr.Port(), DstPort: local.Port()}
	p := wire.Packet(m.Buf[:m.N])
	if !m.HasIPID && p.CheckICRC(&env) != nil {
		// A UDP socket hides the IPv4 ID; write the one the ICRC implies,
		// so the capture shows what was on the wire.
		if id, err := p.CheckICRCAnyIPID(&env); err == nil {
			env.IPID = id
		}
	}
	t.record(&env, p)
}
