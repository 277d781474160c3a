package perftest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/goverbs/goverbs/internal/oob"
	"github.com/goverbs/goverbs/verbs"
)

// Run performs one perftest run: the control-channel sequence of the test
// (doc/tools.md §2.5), the measurement, and the output of the C tool.
// Failures are returned; the caller prints them and exits 1.
func Run(cfg Config, stdout io.Writer) error {
	c, err := oob.Connect(cfg.Server, cfg.Port, func() { printBanner(stdout) })
	if err != nil {
		return err
	}
	defer c.Close()
	ctl := NewConn(c, !cfg.client())
	mtu := verbs.MTU4096 // the active MTU of the tools' devices (oob.LinkMTU)
	if cfg.MTU != 0 {
		mtu, _ = verbs.MTUFromBytes(cfg.MTU)
	}
	setup, err := ctl.Prefix(int(mtu))
	if err != nil {
		return err
	}
	if err := fitUD(&cfg, verbs.MTU(setup.MTU).Bytes(), cfg.stderr()); err != nil {
		return err
	}
	s, err := openSession(&cfg, c, setup.CycleBuffer)
	if err != nil {
		return err
	}
	// The counters are read once the session is closed: its QPs have
	// finished their turns then, so every packet queued was sent and
	// counted (read while a turn ran, ack_sent could count an ACK that
	// sent_pkts did not yet).
	if cfg.Stats != nil {
		defer cfg.Stats(s.dev)
	}
	defer s.close()
	s.mtu = verbs.MTU(setup.MTU)
	r := &runner{cfg: &cfg, s: s, ctl: ctl, conn: c, out: stdout, known: make([]bool, cfg.QPs)}
	printTestInfo(stdout, &cfg, testInfo{dev: s.dev.Name(), mtu: s.mtu.Bytes(), gidIx: s.gidIx, outReads: int(s.my[0].OutReads)})
	fill(s, cfg.client())
	var test func() error
	switch t := cfg.Test; {
	case t.Verb == Send && !t.Lat:
		test = r.sendBW
	case t.Verb == Send:
		test = r.sendLat
	case t.Verb == Write && t.Lat:
		test = r.writeLat
	case t.Lat:
		test = r.readLat
	default:
		test = r.rdmaBW
	}
	if err := test(); err != nil {
		return err
	}
	if inspect != nil {
		inspect(s)
	}
	return nil
}

// inspect, if set by a test, sees the session after a successful run.
var inspect func(*session)

// fill writes a pattern, different on each side, into the half a side
// sends or is read from, so that data that arrives can be told from data
// that was there. Only what the peer reads is filled in the second half:
// the WRITE latency test watches its last byte.
func fill(s *session, client bool) {
	b := s.buf.Bytes()
	seed := byte(0x5a)
	if client {
		seed = 0xc3
	}
	end := s.remote(0)
	if s.cfg.Test.Verb == Read {
		end = len(b)
	}
	for i := range end {
		b[i] = byte(i) ^ seed
	}
}

// runner drives one test's control sequence around its measurement.
type runner struct {
	cfg  *Config
	s    *session
	ctl  *Conn
	conn net.Conn // the control connection under ctl
	out  io.Writer
	// recv is each QP's receive in SEND tests; posted counts those posted
	// on each QP for the current size.
	recv   []verbs.RecvWR
	posted []int
	// known marks the QPs whose peer key has arrived.
	known []bool
}

// ErrQPCount reports a peer that runs with another number of QPs. perftest
// 4.5 does not exchange -q (only versions from 6.28 negotiate it): each
// side sends one key message per QP and reads as many, so the sides drift
// apart and read other items as keys, or key text as a report. The first
// messages give the mismatch away: every copy of a QP's key is identical,
// and each QP has its own QPN.
var ErrQPCount = errors.New("the peer runs with another number of QPs: give both sides the same -q")

// hs is one key-message exchange for QP i; perftest uses them as barriers,
// with QP 0's key, as well. The first key of each QP is kept; every later
// copy must equal it.
func (r *runner) hs(i int) error {
	rem, err := r.ctl.Handshake(&r.s.my[i])
	if err != nil {
		return fmt.Errorf("Failed to exchange data between server and clients: %w", err)
	}
	if r.known[i] {
		if rem != r.s.rem[i] {
			return fmt.Errorf("%w (QP %d: the peer's key message changed from QPN %#x to QPN %#x)", ErrQPCount, i, r.s.rem[i].QPN, rem.QPN)
		}
		return nil
	}
	for j := range i {
		if r.s.rem[j].QPN == rem.QPN {
			return fmt.Errorf("%w (QP %d: the peer sent the key of its QPN %#x again)", ErrQPCount, i, rem.QPN)
		}
	}
	r.s.rem[i], r.known[i] = rem, true
	return nil
}

// hsAll is one key-message exchange per QP.
func (r *runner) hsAll(print string) error {
	for i := range r.s.qps {
		if err := r.hs(i); err != nil {
			return err
		}
		if print != "" {
			printDest(r.out, print, &r.s.rem[i], r.cfg.Test.Verb)
		}
	}
	return nil
}

// hsConnect is the common opening: extra handshakes, the key exchange of
// every QP, RTR (and RTS), then the connection lines of both sides, each
// remote one after another exchange for its QP. extra is the number of
// handshakes before the first, after is the number between the connection
// and the printing of this side's lines.
func (r *runner) hsConnect(extra int, rts bool, after int) error {
	for range extra {
		if err := r.hs(0); err != nil {
			return err
		}
	}
	if err := r.hsAll(""); err != nil {
		return err
	}
	if err := r.s.connect(rts); err != nil {
		return err
	}
	for range after {
		if err := r.hs(0); err != nil {
			return err
		}
	}
	for i := range r.s.my {
		printDest(r.out, "local", &r.s.my[i], r.cfg.Test.Verb)
	}
	return r.hsAll("remote")
}

// close is perftest's ctx_close_connection: a last handshake, then "done"
// and a NUL, after which each side closes without reading.
func (r *runner) close() error {
	if err := r.hs(0); err != nil {
		return fmt.Errorf("Failed to close connection between server and client: %w", err)
	}
	if _, err := r.ctl.rw.Write([]byte("done\x00")); err != nil {
		return fmt.Errorf("Failed to close connection between server and client: %w", err)
	}
	return nil
}

// sizes are the message sizes of the run: with -a 2, 4, ... 2^23, or up
// to the MTU in UD tests, whose messages are one packet.
func (r *runner) sizes() []int {
	if !r.cfg.All {
		return []int{r.cfg.Size}
	}
	var s []int
	for i := 1; i <= 23 && (r.cfg.Conn != verbs.QPTypeUD || 1<<i <= r.s.mtu.Bytes()); i++ {
		s = append(s, 1<<i)
	}
	return s
}

// rdmaBW is ib_write_bw, ib_read_bw and ib_atomic_bw: the client measures,
// the server stays in RTR and prints the client's report.
func (r *runner) rdmaBW() error {
	client, duplex := r.cfg.client(), r.cfg.Duplex
	if err := r.hsConnect(0, client || duplex, 0); err != nil {
		return err
	}
	if err := r.hs(0); err != nil { // after RTR
		return err
	}
	WriteBWHeader(r.out, r.cfg.Gbits)
	if duplex {
		return r.rdmaBWBidir()
	}
	if !client {
		if err := r.hs(0); err != nil { // waits for the whole test
			return err
		}
		rep, err := r.ctl.ExchangeReport(Report{})
		if err != nil {
			return err
		}
		WriteBWLine(r.out, rep, r.cfg.Gbits)
		if err := r.close(); err != nil {
			return err
		}
		fmt.Fprintln(r.out, ResultLine)
		return nil
	}
	var rep Report
	for _, size := range r.sizes() {
		var err error
		if rep, err = r.bwClient(size); err != nil {
			return err
		}
		WriteBWLine(r.out, rep, r.cfg.Gbits)
	}
	fmt.Fprintln(r.out, ResultLine)
	if err := r.hs(0); err != nil {
		return err
	}
	if _, err := r.ctl.ExchangeReport(rep); err != nil {
		return err
	}
	return r.close()
}

// sendBW is ib_send_bw: the client sends, the server (in RTR) receives;
// each prints its own report. With -b both send and receive, and print the
// sum of their reports, except in a -D run, whose reports count both
// directions already (doc/tools.md §2.10).
func (r *runner) sendBW() error {
	client, duplex := r.cfg.client(), r.cfg.Duplex
	if err := r.hsConnect(0, client || duplex, 1); err != nil {
		return err
	}
	WriteBWHeader(r.out, r.cfg.Gbits)
	for _, size := range r.sizes() {
		if !client || duplex {
			if err := r.postRecvs(size, min(r.cfg.RxDepth, r.cfg.Iters)); err != nil {
				return err
			}
		}
		if err := r.hs(0); err != nil {
			return err
		}
		var rep Report
		var err error
		switch {
		case duplex:
			rep, err = r.bwBidir(size)
		case client:
			rep, err = r.bwClient(size)
		default:
			rep, err = r.bwServer(size)
		}
		if err != nil {
			return err
		}
		if duplex && r.cfg.Duration == 0 {
			err = r.printBidir(rep)
		} else {
			WriteBWLine(r.out, rep, r.cfg.Gbits)
		}
		if err != nil {
			return err
		}
		if r.cfg.All {
			if err := r.hs(0); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(r.out, ResultLine)
	return r.close()
}

// writeLat is ib_write_lat: both sides measure; there is no closing
// exchange, so each side lingers until the other is done.
func (r *runner) writeLat() error {
	if err := r.hsConnect(1, true, 0); err != nil {
		return err
	}
	if err := r.hs(0); err != nil {
		return err
	}
	writeLatHeader(r.out, r.cfg.Duration > 0)
	for _, size := range r.sizes() {
		l, err := r.latWrite(size)
		if err != nil {
			return err
		}
		l.print(r.out, r.cfg)
	}
	fmt.Fprintln(r.out, ResultLine)
	linger(r.conn, lingerMax)
	return nil
}

// lingerMax bounds the wait for the peer at the end of ib_write_lat: far
// longer than the skew between two -D clocks started by one handshake.
const lingerMax = 10 * time.Second

// linger keeps this side's QP answering until the peer has finished too.
// ib_write_lat ends without a closing exchange, each side when its own
// count or clock runs out. A C peer still polling for the ACK of its last
// WRITE when our QP goes away polls for ever, since rxe retries without
// end at retry_cnt 7 (seen in the lab with -D). So this side shuts its
// half of the control connection and waits, up to max, for the peer to
// end its half: the C tool does when it exits, goverbs when it lingers in
// turn.
func linger(c net.Conn, max time.Duration) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(max))
	io.Copy(io.Discard, c)
}

// readLat is ib_read_lat and ib_atomic_lat: only the client measures; the
// server waits in the closing exchange.
func (r *runner) readLat() error {
	if err := r.hsConnect(1, true, 0); err != nil {
		return err
	}
	if err := r.hs(0); err != nil {
		return err
	}
	if !r.cfg.client() {
		if err := r.close(); err != nil {
			return err
		}
		fmt.Fprintln(r.out, ResultLine)
		return nil
	}
	writeLatHeader(r.out, r.cfg.Duration > 0)
	for _, size := range r.sizes() {
		l, err := r.latRead(size)
		if err != nil {
			return err
		}
		l.print(r.out, r.cfg)
	}
	if err := r.close(); err != nil {
		return err
	}
	fmt.Fprintln(r.out, ResultLine)
	return nil
}

// sendLat is ib_send_lat: a ping-pong of SENDs, the client first.
func (r *runner) sendLat() error {
	if err := r.hsConnect(0, true, 1); err != nil {
		return err
	}
	writeLatHeader(r.out, r.cfg.Duration > 0)
	for _, size := range r.sizes() {
		if err := r.postRecvs(size, min(r.cfg.RxDepth, r.cfg.Iters)); err != nil {
			return err
		}
		if err := r.hs(0); err != nil {
			return err
		}
		l, err := r.latSend(size)
		if err != nil {
			return err
		}
		l.print(r.out, r.cfg)
	}
	fmt.Fprintln(r.out, ResultLine)
	return r.close()
}
