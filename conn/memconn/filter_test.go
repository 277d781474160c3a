package memconn_test

import (
	"github.com/goverbs/goverbs/internal/leakcheck"

	"bytes"
	"testing"

	"github.com/goverbs/goverbs/conn"
	"github.com/goverbs/goverbs/conn/memconn"
)

func TestFilter(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{})
	var seen []string
	n.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
		if d.Src != a.LocalAddr() || d.Dst != b.LocalAddr() {
			t.Errorf("filter saw %v -> %v", d.Src, d.Dst)
		}
		seen = append(seen, string(d.Data))
		switch d.Data[0] {
		case 'D':
			return memconn.Drop
		case 'P':
			return memconn.Duplicate
		case 'M':
			d.Data[1] ^= 0x20 // corrupt in place
		case 'T':
			d.Data = d.Data[:3] // truncate by reslicing
		case 'R':
			d.Data = []byte("replaced by a longer datagram")
		}
		return memconn.Deliver
	})
	sent := []string{"Drop me", "Pair", "Modify", "Truncate", "Replace", "keep"}
	msgs := make([]conn.Message, len(sent))
	for i, s := range sent {
		msgs[i] = conn.Message{Buf: []byte(s), Addr: b.LocalAddr()}
	}
	if k, err := a.Send(msgs); k != len(msgs) || err != nil {
		t.Fatalf("Send = %d, %v", k, err)
	}
	want := []string{"Pair", "Pair", "MOdify", "Tru", "replaced by a longer datagram", "keep"}
	for i, m := range recvN(t, b, len(want)) {
		if got := string(m.Buf[:m.N]); got != want[i] {
			t.Errorf("datagram %d = %q, want %q", i, got, want[i])
		}
	}
	if string(msgs[2].Buf) != "Modify" {
		t.Errorf("the filter changed the sender's buffer: %q", msgs[2].Buf)
	}
	if len(seen) != len(sent) {
		t.Errorf("filter saw %q", seen)
	}
	s := n.Stats()
	if s.Sent != 6 || s.Dropped.Filter != 1 || s.Duplicated != 1 || s.Delivered != 6 {
		t.Errorf("stats %+v", s)
	}

	n.SetFilter(nil)
	a.Send(msgs[:1])
	if m := recvN(t, b, 1)[0]; string(m.Buf[:m.N]) != "Drop me" {
		t.Errorf("after SetFilter(nil) got %q", m.Buf[:m.N])
	}
}

// The filter runs before the random impairments: it sees what was sent.
func TestFilterSeesUncorrupted(t *testing.T) {
	leakcheck.Check(t)
	n, a, b := pair(t, memconn.Options{Impairments: memconn.Impairments{Corrupt: 1}})
	orig := payload(1, 100)
	n.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
		if !bytes.Equal(d.Data, orig) {
			t.Error("filter saw a corrupted datagram")
		}
		return memconn.Deliver
	})
	a.Send([]conn.Message{{Buf: orig, Addr: b.LocalAddr()}})
	if m := recvN(t, b, 1)[0]; bytes.Equal(m.Buf[:m.N], orig) {
		t.Error("datagram not corrupted")
	}
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[memconn.Verdict]string{memconn.Deliver: "Deliver", memconn.Drop: "Drop", memconn.Duplicate: "Duplicate", 7: "Verdict(?)"} {
		if got := v.String(); got != want {
			t.Errorf("%d.String() = %q", int(v), got)
		}
	}
}
