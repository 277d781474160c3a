package oob

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConnectAndDeviceAddr(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	accepted := make(chan net.Conn)
	listening := make(chan struct{})
	go func() {
		c, err := Connect("", port, func() { close(listening) })
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	<-listening
	c, err := Connect("127.0.0.3", port, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	defer s.Close()
	// Each side's device takes the address its peer reached it on.
	for conn, want := range map[net.Conn]string{s: "127.0.0.3:4791", c: "127.0.0.1:4791"} {
		if a, err := DeviceAddr(conn, ""); err != nil || a != netip.MustParseAddrPort(want) {
			t.Errorf("device address %v, %v; want %s", a, err, want)
		}
	}
	if a, err := DeviceAddr(c, "10.0.0.1"); err != nil || a.String() != "10.0.0.1:4791" {
		t.Errorf("--addr 10.0.0.1: %v, %v", a, err)
	}
	if _, err := DeviceAddr(c, "bogus"); err == nil {
		t.Error("bad --addr accepted")
	}
	if _, err := Connect("127.0.0.1", port, nil); err == nil || !strings.HasPrefix(err.Error(), "Couldn't connect to 127.0.0.1:") {
		t.Errorf("nobody listening: %v", err)
	}
}

// TestOpenDeviceTaken: a second device on a taken address says why.
func TestOpenDeviceTaken(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.1.9:0")
	d, err := OpenDevice("", a, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := OpenDevice("", d.Addr(), 0); err == nil || !strings.Contains(err.Error(), "connect to 127.0.0.2 instead of 127.0.0.1") {
		t.Errorf("second device on %v: %v", d.Addr(), err)
	}
}

func TestServerHost(t *testing.T) {
	for _, c := range []struct {
		args    []string
		host    string
		wantErr bool
	}{
		{nil, "", false},
		{[]string{"10.0.0.2"}, "10.0.0.2", false},
		{[]string{"a", "b"}, "", true},
	} {
		host, err := ServerHost(c.args)
		if host != c.host || (err != nil) != c.wantErr {
			t.Errorf("ServerHost(%q) = %q, %v", c.args, host, err)
		}
	}
}

// TestReadFullPeerGone: a read that met the peer's close says the peer's
// output explains it, and, between two ends of one address, how two tools on
// one host keep their devices apart; other errors pass unchanged.
func TestReadFullPeerGone(t *testing.T) {
	for _, c := range []struct {
		dial     string
		sameHost bool
	}{{"127.0.0.1", true}, {"127.0.0.2", false}} {
		l, err := net.Listen("tcp", c.dial+":0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if s, err := l.Accept(); err == nil {
				s.Close()
			}
		}()
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got := ReadFull(conn, make([]byte, 8))
		conn.Close()
		l.Close()
		if !errors.Is(got, io.EOF) || !strings.Contains(got.Error(), "the peer closed the connection") {
			t.Errorf("dialling %s: %v", c.dial, got)
		}
		if strings.Contains(got.Error(), "127.0.0.2 instead") != c.sameHost {
			t.Errorf("dialling %s: the one-host hint is there: %v, want %v: %v", c.dial, !c.sameHost, c.sameHost, got)
		}
	}
	other := errors.New("reset")
	if got := peerGone(strings.NewReader(""), other); got != other {
		t.Errorf("another error became %v", got)
	}
}

// TestReadFirst: the first message read fails, saying why, when none
// comes within FirstReply, and a read after one that came has no limit.
func TestReadFirst(t *testing.T) {
	defer func(d time.Duration) { FirstReply = d }(FirstReply)
	FirstReply = 50 * time.Millisecond
	a, b := tcpPair(t)
	buf := make([]byte, 4)
	start := time.Now()
	err := ReadFirst(a, buf)
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "no message from the peer in 50ms: is it the same tool?") {
		t.Fatalf("silent peer: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}

	a, b = tcpPair(t)
	go func() {
		b.Write([]byte("one!"))
		time.Sleep(4 * FirstReply)
		b.Write([]byte("two!"))
	}()
	if err := ReadFirst(a, buf); err != nil || string(buf) != "one!" {
		t.Fatalf("first message %q, %v", buf, err)
	}
	if err := ReadFull(a, buf); err != nil || string(buf) != "two!" {
		t.Fatalf("a later message, sent after FirstReply: %q, %v", buf, err)
	}
}

// tcpPair returns the two ends of a TCP connection over loopback.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}
