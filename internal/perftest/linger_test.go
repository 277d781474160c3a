package perftest

import (
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if a, err = net.Dial("tcp", l.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if b, err = l.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestLinger: a lingering side tells its peer at once that it is done,
// stays until the peer's side of the connection ends, and gives up after
// its bound; two lingering sides release each other.
func TestLinger(t *testing.T) {
	a, b := tcpPair(t)
	done := make(chan struct{})
	go func() { linger(a, lingerMax); close(done) }()
	if n, err := b.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the peer read %d bytes, %v; want the lingering side's end of file", n, err)
	}
	select {
	case <-done:
		t.Fatal("linger returned while the peer was still there")
	case <-time.After(100 * time.Millisecond):
	}
	b.Close()
	<-done

	a, b = tcpPair(t)
	start := time.Now()
	done = make(chan struct{})
	go func() { linger(a, lingerMax); close(done) }()
	linger(b, lingerMax)
	<-done
	if d := time.Since(start); d >= lingerMax {
		t.Errorf("two lingering sides took %v, the full bound", d)
	}

	a, _ = tcpPair(t)
	start = time.Now()
	linger(a, 50*time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("linger gave up after %v with the peer still there", d)
	}
}
