// Package perftest speaks the TCP control channel of linux-rdma/perftest
// 4.5 (ib_write_bw and friends; doc/tools.md §2): version, buffer and MTU
// negotiation, the per-QP key message, the report exchange, and the
// result lines those tools print.
package perftest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/internal/oob"
)

// Version is the perftest version announced: Debian 12's perftest 4.5-0.17
// says 6.06. Peers from 5.70 on accept it, and below 6.28 nobody sends the
// raw-struct negotiation message (doc/tools.md §2.1).
const Version = "6.06"

// minPeerVersion is the oldest version perftest talks to.
const minPeerVersion = 5.70

// Defaults both sides send and keep the maximum of.
const (
	CycleBuffer = 4096 // page size
	CacheLine   = 64
)

// Conn is one side of the control channel. Every item goes both ways:
// the client writes its copy first and then reads the server's, the
// server reads first and then writes (doc/tools.md §2.3). Each copy is one
// write of a fixed size.
type Conn struct {
	rw     io.ReadWriter
	server bool
}

// NewConn wraps the TCP connection of one side.
func NewConn(rw io.ReadWriter, server bool) *Conn { return &Conn{rw: rw, server: server} }

// swap sends mine and receives the peer's copy of one item. A peer that
// closed the connection is explained (oob.ReadFull).
func (c *Conn) swap(mine, theirs []byte) error { return c.swapBy(oob.ReadFull, mine, theirs) }

// swapBy is swap reading the peer's copy with read: oob.ReadFirst for
// the first item, which a peer of another kind never answers.
func (c *Conn) swapBy(read func(io.Reader, []byte) error, mine, theirs []byte) error {
	if c.server {
		if err := read(c.rw, theirs); err != nil {
			return err
		}
		_, err := c.rw.Write(mine)
		return err
	}
	if _, err := c.rw.Write(mine); err != nil {
		return err
	}
	return read(c.rw, theirs)
}

// ErrVersion reports a peer too old to talk to.
var ErrVersion = errors.New("Current implementation is not compatible with versions older than 5.70")

// Setup is what the common prefix negotiates.
type Setup struct {
	PeerVersion string
	CycleBuffer int
	CacheLine   int
	MTU         int // IB MTU enum, 1..5
}

// Prefix runs the common prefix of every test: version, cycle buffer,
// cache line and MTU (doc/tools.md §2.3, items V, Y1, Y2, M). mtu is this
// side's IB MTU enum; the result is the smaller of both.
func (c *Conn) Prefix(mtu int) (Setup, error) {
	var s Setup
	var v, pv [16]byte
	copy(v[:], Version)
	if err := c.swapBy(oob.ReadFirst, v[:], pv[:]); err != nil {
		return s, fmt.Errorf("exchanging versions: %w", err)
	}
	s.PeerVersion = strings.TrimRight(string(pv[:]), "\x00")
	if f, err := strconv.ParseFloat(s.PeerVersion, 64); err != nil || f < minPeerVersion {
		return s, fmt.Errorf("%w (peer says %q)", ErrVersion, s.PeerVersion)
	}
	var err error
	if s.CycleBuffer, err = c.swapInt32(CycleBuffer); err != nil {
		return s, fmt.Errorf("exchanging the cycle buffer: %w", err)
	}
	if s.CacheLine, err = c.swapInt32(CacheLine); err != nil {
		return s, fmt.Errorf("exchanging the cache line: %w", err)
	}
	s.CycleBuffer, s.CacheLine = max(s.CycleBuffer, CycleBuffer), max(s.CacheLine, CacheLine)
	mine := [2]byte{byte('0' + mtu)}
	var theirs [2]byte
	if err := c.swap(mine[:], theirs[:]); err != nil {
		return s, fmt.Errorf("exchanging the MTU: %w", err)
	}
	s.MTU = mtu
	if p := int(theirs[0] - '0'); theirs[1] == 0 && p >= 1 && p <= 5 {
		s.MTU = min(mtu, p)
	}
	return s, nil
}

func (c *Conn) swapInt32(v int) (int, error) {
	var mine, theirs [4]byte
	binary.BigEndian.PutUint32(mine[:], uint32(v))
	if err := c.swap(mine[:], theirs[:]); err != nil {
		return 0, err
	}
	return int(int32(binary.BigEndian.Uint32(theirs[:]))), nil
}

// Handshake exchanges key messages (one "HS"): it sends mine and returns
// the peer's. perftest uses the same exchange as a barrier, and every copy
// must carry the full, identical record.
func (c *Conn) Handshake(mine *Dest) (Dest, error) {
	var in [KeySize]byte
	out := mine.Marshal()
	if err := c.swap(out[:], in[:]); err != nil {
		return Dest{}, fmt.Errorf("exchanging key messages: %w", err)
	}
	return ParseDest(in[:])
}

// Report is what a BW client sends the server after the test (doc/tools.md
// §2.8); the server prints the client's numbers.
type Report struct {
	Size, Iters            uint64
	BWPeak, BWAvg, MsgRate float64 // MB/s (2^20), MB/s, Mpps
}

// ExchangeReport swaps reports: five 8-byte items, client first.
func (c *Conn) ExchangeReport(mine Report) (Report, error) {
	var r Report
	items := []struct {
		out uint64
		in  *uint64
	}{{mine.Size, &r.Size}, {mine.Iters, &r.Iters}}
	for _, it := range items {
		v, err := c.swap64(it.out)
		if err != nil {
			return r, fmt.Errorf("exchanging the report: %w", err)
		}
		*it.in = v
	}
	for _, f := range []struct {
		out float64
		in  *float64
	}{{mine.BWPeak, &r.BWPeak}, {mine.BWAvg, &r.BWAvg}, {mine.MsgRate, &r.MsgRate}} {
		v, err := c.swap64(math.Float64bits(f.out))
		if err != nil {
			return r, fmt.Errorf("exchanging the report: %w", err)
		}
		*f.in = math.Float64frombits(v)
	}
	return r, nil
}

func (c *Conn) swap64(v uint64) (uint64, error) {
	var mine, theirs [8]byte
	binary.BigEndian.PutUint64(mine[:], v)
	if err := c.swap(mine[:], theirs[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(theirs[:]), nil
}
