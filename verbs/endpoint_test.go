package verbs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"
)

// TestEndpointText: an endpoint prints as ibv_rc_pingpong's address line
// does, and reads back the same, as text and inside JSON.
func TestEndpointText(t *testing.T) {
	for _, c := range []struct {
		e    verbs.Endpoint
		text string
	}{
		{verbs.Endpoint{QPN: 0x11, PSN: 0xa1b2, GID: verbs.GIDFromAddr(netip.MustParseAddr("127.0.0.1")), Port: 4791},
			"QPN 0x000011, PSN 0x00a1b2, GID ::ffff:127.0.0.1, port 4791"},
		{verbs.Endpoint{QPN: 0xffffff, PSN: 0xffffff, GID: verbs.GIDFromAddr(netip.MustParseAddr("fd00::2")), Port: 50123},
			"QPN 0xffffff, PSN 0xffffff, GID fd00::2, port 50123"},
	} {
		if got := c.e.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
		back, err := verbs.ParseEndpoint(c.text)
		if err != nil || back != c.e {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v", c.text, back, err, c.e)
		}
		js, err := json.Marshal(map[string]verbs.Endpoint{"qp": c.e})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]verbs.Endpoint
		if err := json.Unmarshal(js, &m); err != nil || m["qp"] != c.e {
			t.Errorf("JSON %s read back as %+v, %v", js, m["qp"], err)
		}
	}
	// Decimal numbers, leading zeros and all, a plain IPv4 address, and
	// space around the fields, a line's newline among it, are read too.
	want := verbs.Endpoint{QPN: 17, PSN: 41394, GID: verbs.GIDFromAddr(netip.MustParseAddr("10.0.0.1")), Port: 4791}
	for _, text := range []string{"QPN 17, PSN 41394, GID 10.0.0.1, port 4791", "QPN 000017, PSN 041394, GID 10.0.0.1, port 4791\n",
		" QPN 0X11 ,PSN  0xa1b2,GID ::ffff:10.0.0.1,  port 4791\r\n"} {
		if e, err := verbs.ParseEndpoint(text); err != nil || e != want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v", text, e, err, want)
		}
	}
	// What no QP has does not go out as text that would not read back.
	for _, e := range []verbs.Endpoint{{QPN: 1 << 24}, {PSN: 1 << 24}} {
		if _, err := json.Marshal(e); !errors.Is(err, verbs.ErrInvalidArgument) {
			t.Errorf("JSON of %+v: %v, want ErrInvalidArgument", e, err)
		}
	}
}

// TestParseEndpointErrors: text that is not an endpoint fails with
// ErrInvalidArgument and says what is wrong.
func TestParseEndpointErrors(t *testing.T) {
	for _, c := range []struct{ text, why string }{
		{"", "want"},
		{"QPN 0x11, PSN 0x1, GID ::1", "want"},
		{"QPN 0x11, PSN 0x1, GID ::1, port 4791, extra 1", "want"},
		{"PSN 0x1, QPN 0x11, GID ::1, port 4791", "want QPN"},
		{"QPN 0x1000000, PSN 0x1, GID ::1, port 4791", "QPN"},
		{"QPN 0x11, PSN 0x1000000, GID ::1, port 4791", "PSN"},
		{"QPN 0x11, PSN 0x1, GID not-an-address, port 4791", "GID"},
		{"QPN 0x11, PSN 0x1, GID fe80::1%eth0, port 4791", "zone"},
		{"QPN 0x11, PSN 0x1, GID ::1, port 65536", "port"},
		{"QPN 0x11, PSN 0x1, GID ::1, port 0x12b7", "port"},
		{"QPN, PSN 0x1, GID ::1, port 4791", "want QPN"},
		{"QPN 0o21, PSN 0x1, GID ::1, port 4791", "QPN"},
		{"QPN 1_0, PSN 0x1, GID ::1, port 4791", "QPN"},
		{"QPN 0x, PSN 0x1, GID ::1, port 4791", "QPN"},
		{"QPN 0x11, PSN -1, GID ::1, port 4791", "PSN"},
	} {
		e, err := verbs.ParseEndpoint(c.text)
		if !errors.Is(err, verbs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want ErrInvalidArgument about %q", c.text, e, err, c.why)
		}
		if e != (verbs.Endpoint{}) {
			t.Errorf("ParseEndpoint(%q) returned %+v with its error", c.text, e)
		}
	}
	var e verbs.Endpoint
	if err := json.Unmarshal([]byte(`"QPN 1"`), &e); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Errorf("JSON of a bad endpoint: %v", err)
	}
}

// ExampleParseEndpoint: an endpoint crosses to the peer as one line of
// text, which the peer reads back for ConnectRC.
func ExampleParseEndpoint() {
	mine := verbs.Endpoint{QPN: 0x11, PSN: 0xa1b2, GID: verbs.GIDFromAddr(netip.MustParseAddr("192.0.2.10")), Port: 4791}
	line := mine.String() // send it over TCP, a file, an environment variable...
	peer, err := verbs.ParseEndpoint(line)
	fmt.Println(line)
	fmt.Println(peer == mine, err)
	// Output:
	// QPN 0x000011, PSN 0x00a1b2, GID ::ffff:192.0.2.10, port 4791
	// true <nil>
}

// FuzzParseEndpoint: any text either fails or gives an endpoint whose
// String reads back as the same endpoint.
func FuzzParseEndpoint(f *testing.F) {
	f.Add("QPN 0x000011, PSN 0x00a1b2, GID ::ffff:127.0.0.1, port 4791")
	f.Add("QPN 17, PSN 0, GID fd00::2, port 0")
	f.Add("QPN 0x11, PSN 0x1, GID fe80::1%eth0, port 4791")
	f.Add("QPN 0o21, PSN 0b1, GID 10.0.0.1, port 65535")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := verbs.ParseEndpoint(s)
		if err != nil {
			return
		}
		back, err := verbs.ParseEndpoint(e.String())
		if err != nil || back != e {
			t.Fatalf("%q parsed as %+v, whose String %q reads back as %+v, %v", s, e, e.String(), back, err)
		}
	})
}

// TestGIDText: a GID reads back from its String, in JSON as text; an
// IPv4 address stands for its IPv4-mapped GID; what is no address fails
// with ErrInvalidArgument.
func TestGIDText(t *testing.T) {
	g := verbs.GIDFromAddr(netip.MustParseAddr("10.0.0.2"))
	for _, s := range []string{"::ffff:10.0.0.2", "10.0.0.2"} {
		if got, err := verbs.ParseGID(s); err != nil || got != g {
			t.Errorf("ParseGID(%q) = %v, %v; want %v", s, got, err, g)
		}
	}
	js, err := json.Marshal(struct{ GID verbs.GID }{g})
	if err != nil || string(js) != `{"GID":"::ffff:10.0.0.2"}` {
		t.Errorf("JSON %s, %v", js, err)
	}
	var back struct{ GID verbs.GID }
	if err := json.Unmarshal(js, &back); err != nil || back.GID != g {
		t.Errorf("JSON read back as %v, %v", back.GID, err)
	}
	for _, s := range []string{"", "nope", "fe80::1%eth0", "10.0.0.256"} {
		if got, err := verbs.ParseGID(s); !errors.Is(err, verbs.ErrInvalidArgument) || !got.IsZero() {
			t.Errorf("ParseGID(%q) = %v, %v; want ErrInvalidArgument", s, got, err)
		}
	}
}

// FuzzEndpointString: every endpoint a QP can have prints as text that
// reads back as the same endpoint.
func FuzzEndpointString(f *testing.F) {
	f.Add(uint32(0x11), uint32(0xa1b2), []byte{127, 0, 0, 1}, uint16(4791))
	f.Add(uint32(0xffffff), uint32(0), []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, uint16(0))
	f.Fuzz(func(t *testing.T, qpn, psn uint32, ip []byte, port uint16) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		e := verbs.Endpoint{QPN: verbs.QPN(qpn & 0xffffff), PSN: psn & 0xffffff, GID: verbs.GIDFromAddr(a), Port: port}
		text, err := e.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := verbs.ParseEndpoint(string(text)); err != nil || back != e {
			t.Fatalf("%+v printed as %q, read back as %+v, %v", e, text, back, err)
		}
	})
}
