// Package pingpong is the goverbs counterpart of rdma-core's
// ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong:
// the same options, the same TCP exchange of QP number, PSN and GID
// (doc/tools.md §1), the same ping-pong of SENDs and the same output, so
// it can stand on either side of a connection with the C tool.
package pingpong

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/goverbs/goverbs/internal/oob"
	"github.com/goverbs/goverbs/verbs"
)

// Work request ids, as in rc_pingpong: the pending mask is built from them.
const (
	recvWRID = 1
	sendWRID = 2
)

// session is one run's RDMA resources.
type session struct {
	cfg   Config
	dev   *verbs.Device
	pd    *verbs.PD
	cq    *verbs.CQ
	qp    *verbs.QP
	mr    *verbs.MR
	routs int // receives outstanding
	// With -e: the completion channel of cq and the events taken from
	// it, acknowledged at the end.
	ch     *verbs.CompChannel
	events int
	// UD (ud.go): receives take grh bytes more than size, sends start
	// grh bytes into the buffer, and go to ah.
	grh int
	ah  *verbs.AH
}

// Run performs one ping-pong run. Progress lines go to stdout as the C tool
// prints them; failures are returned (the caller prints them and exits 1).
func Run(cfg Config, stdout io.Writer) error {
	if cfg.Type == verbs.QPTypeUD && cfg.Size > oob.ActiveMTU {
		// ud_pingpong's check, before it listens or connects: a UD
		// message is one packet.
		return fmt.Errorf("Requested size larger than port MTU (%d)", oob.ActiveMTU)
	}
	c, err := oob.Connect(cfg.Server, cfg.Port, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := open(cfg, c)
	if err != nil {
		return err
	}
	if cfg.Stats != nil {
		defer cfg.Stats(s.dev) // after close: final counters (as perftest's Run)
	}
	defer s.close()

	my := dest{qpn: uint32(s.qp.QPN()), psn: rand.Uint32() & 0xffffff}
	if my.gid, err = s.dev.QueryGID(1, max(cfg.GIDIdx, 0)); err != nil {
		return fmt.Errorf("can't read sgid of index %d: %s has one GID, index 0 (%v)", cfg.GIDIdx, s.dev.Name(), s.dev.Addr().Addr())
	}
	printLocal(stdout, &my, cfg.Type)
	rem, err := s.exchange(c, &my)
	if err != nil {
		return err
	}
	printDest(stdout, "  remote address:", &rem)
	return s.pingpong(stdout, &rem)
}

// openDevice opens the device of every ping-pong tool on the RoCE address,
// by default the IP this end of the TCP connection uses.
func openDevice(cfg Config, c net.Conn) (*verbs.Device, error) {
	addr, err := oob.DeviceAddr(c, cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.IBPort != 1 {
		return nil, fmt.Errorf("Couldn't get port info: port %d", cfg.IBPort)
	}
	busyPoll := verbs.BusyPollOff // -e sleeps on the CQ: no spinning anywhere
	if !cfg.Events {
		busyPoll = oob.BusyPoll
	}
	return oob.OpenDevice(cfg.IBDev, addr, busyPoll)
}

// open creates the device (openDevice) and the QP, CQ and buffer of
// rc_pingpong, and posts rx_depth receives.
func open(cfg Config, c net.Conn) (*session, error) {
	dev, err := openDevice(cfg, c)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, dev: dev}
	if cfg.Type == verbs.QPTypeUD {
		s.grh = grhSize
	}
	if s.pd, err = dev.AllocPD(); err != nil {
		return nil, s.fail("Couldn't allocate PD", err)
	}
	// The buffer is filled with 0x7b and shared by every send and receive,
	// so each message echoes the one received last.
	buf := make([]byte, s.grh+cfg.Size)
	for i := range buf {
		buf[i] = 0x7b
	}
	if s.mr, err = s.pd.RegMR(buf, verbs.AccessLocalWrite); err != nil {
		return nil, s.fail("Couldn't register MR", err)
	}
	if cfg.Events {
		if s.ch, err = dev.CreateCompChannel(); err != nil {
			return nil, s.fail("Couldn't create completion channel", err)
		}
		s.cq, err = dev.CreateCQWithChannel(cfg.RxDepth+1, s.ch)
	} else {
		s.cq, err = dev.CreateCQ(cfg.RxDepth + 1)
	}
	if err != nil {
		return nil, s.fail("Couldn't create CQ", err)
	}
	s.qp, err = s.pd.CreateQP(&verbs.QPInitAttr{Type: cfg.qpType(), SendCQ: s.cq, RecvCQ: s.cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: uint32(cfg.RxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return nil, s.fail("Couldn't create QP", err)
	}
	// RC and UC allow no remote access; UD has a Q_Key instead.
	init, mask := verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, QKey: qkey}, verbs.QPAttrAccessFlags
	if cfg.Type == verbs.QPTypeUD {
		mask = verbs.QPAttrQKey
	}
	if err := s.qp.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|mask); err != nil {
		return nil, s.fail("Failed to modify QP to INIT", err)
	}
	if s.routs = s.postRecv(cfg.RxDepth); s.routs < cfg.RxDepth {
		return nil, s.fail(fmt.Sprintf("Couldn't post receive (%d)", s.routs), nil)
	}
	// Armed before the exchange, as rc_pingpong does: the peer may send
	// as soon as the QPs are connected.
	if cfg.Events {
		if err := s.cq.ReqNotify(false); err != nil {
			return nil, s.fail("Couldn't request CQ notification", err)
		}
	}
	return s, nil
}

func (s *session) fail(msg string, err error) error {
	s.close()
	if err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return errors.New(msg)
}

func (s *session) close() {
	if s.ah != nil {
		s.ah.Close()
	}
	oob.Release(s.dev, s.mr, s.qp)
	if s.ch != nil {
		s.cq.Close()
		s.ch.Close()
	}
}

func printDest(w io.Writer, label string, d *dest) {
	fmt.Fprintf(w, "%s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", label, d.lid, d.qpn, d.psn, d.gid)
}

// printResult writes rc_pingpong's two result lines for bytes moved in
// iters exchanges taking usec microseconds. The C tool keeps the time in
// a float and divides it by the int iters in single precision; the same
// arithmetic here gives the same digits.
func printResult(w io.Writer, bytes int64, iters int, usec int64) {
	t := float32(usec)
	fmt.Fprintf(w, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, float64(t)/1e6, float64(bytes)*8/float64(t))
	fmt.Fprintf(w, "%d iters in %.2f seconds = %.2f usec/iter\n", iters, float64(t)/1e6, t/float32(iters))
}

// exchange swaps address messages (doc/tools.md §1.2) and connects the QP:
// the server before it answers, the client after "done".
func (s *session) exchange(c net.Conn, my *dest) (dest, error) {
	buf := make([]byte, msgSize)
	if s.cfg.Server == "" {
		if err := oob.ReadFirst(c, buf); err != nil {
			return dest{}, fmt.Errorf("Couldn't read remote address: %w", err)
		}
		rem, err := parseDest(buf)
		if err != nil {
			return dest{}, err
		}
		if err := s.connect(my, &rem); err != nil {
			return dest{}, err
		}
		if _, err := c.Write(my.marshal()); err != nil {
			return dest{}, fmt.Errorf("Couldn't send local address: %w", err)
		}
		done := make([]byte, 5)
		if err := oob.ReadFull(c, done); err != nil || string(done) != "done\x00" {
			return dest{}, fmt.Errorf("Couldn't read \"done\" message: %v", err)
		}
		return rem, nil
	}
	if _, err := c.Write(my.marshal()); err != nil {
		return dest{}, fmt.Errorf("Couldn't send local address: %w", err)
	}
	if err := oob.ReadFirst(c, buf); err != nil {
		return dest{}, fmt.Errorf("Couldn't read remote address: %w", err)
	}
	rem, err := parseDest(buf)
	if err != nil {
		return dest{}, err
	}
	if _, err := c.Write([]byte("done\x00")); err != nil {
		return dest{}, fmt.Errorf("Couldn't send \"done\" message: %w", err)
	}
	return rem, s.connect(my, &rem)
}

// connect moves the QP to RTR and RTS with the C tool's attributes
// (doc/tools.md §1.3, §1.6, §1.7).
func (s *session) connect(my, rem *dest) error {
	switch s.cfg.Type {
	case verbs.QPTypeUC:
		return connectUC(s.qp, &s.cfg, my, rem)
	case verbs.QPTypeUD:
		return s.connectUD(my, rem)
	}
	return connectRC(s.qp, &s.cfg, my, rem)
}

// errNoGID refuses a peer whose address message has no GID: on RoCE the
// GID is the address.
var errNoGID = errors.New("the peer sent no GID (run the C tool with -g)")

// pathTo is the address vector of the tools: the peer's GID, hop limit 1.
func pathTo(rem *dest, cfg *Config) verbs.AHAttr {
	return verbs.AHAttr{IsGlobal: true, DGID: rem.gid, HopLimit: 1, SL: uint8(cfg.SL), PortNum: 1}
}

// connectRC moves an RC QP to RTR and RTS towards rem, sending from my's
// PSN, with the attributes of rc_pingpong and srq_pingpong.
func connectRC(qp *verbs.QP, cfg *Config, my, rem *dest) error {
	if rem.gid.IsZero() {
		return fmt.Errorf("Failed to modify QP to RTR: %w", errNoGID)
	}
	mtu, _ := verbs.MTUFromBytes(cfg.MTU)
	rtr := verbs.QPAttr{State: verbs.QPStateRTR, PathMTU: mtu, DestQPN: verbs.QPN(rem.qpn), RQPSN: rem.psn,
		MaxDestRdAtomic: 1, MinRNRTimer: 12, AH: pathTo(rem, cfg)}
	if err := qp.Modify(&rtr, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRdAtomic|verbs.QPAttrMinRNRTimer); err != nil {
		return fmt.Errorf("Failed to modify QP to RTR: %w", err)
	}
	rts := verbs.QPAttr{State: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: my.psn, MaxRdAtomic: 1}
	if err := qp.Modify(&rts, verbs.QPAttrState|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|
		verbs.QPAttrSQPSN|verbs.QPAttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("Failed to modify QP to RTS: %w", err)
	}
	return nil
}

// connectUC moves a UC QP to RTR and RTS towards rem with uc_pingpong's
// attributes: rc_pingpong's without those of ACKs, retries and READs.
func connectUC(qp *verbs.QP, cfg *Config, my, rem *dest) error {
	if rem.gid.IsZero() {
		return fmt.Errorf("Failed to modify QP to RTR: %w", errNoGID)
	}
	mtu, _ := verbs.MTUFromBytes(cfg.MTU)
	rtr := verbs.QPAttr{State: verbs.QPStateRTR, PathMTU: mtu, DestQPN: verbs.QPN(rem.qpn), RQPSN: rem.psn, AH: pathTo(rem, cfg)}
	if err := qp.Modify(&rtr, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN); err != nil {
		return fmt.Errorf("Failed to modify QP to RTR: %w", err)
	}
	rts := verbs.QPAttr{State: verbs.QPStateRTS, SQPSN: my.psn}
	if err := qp.Modify(&rts, verbs.QPAttrState|verbs.QPAttrSQPSN); err != nil {
		return fmt.Errorf("Failed to modify QP to RTS: %w", err)
	}
	return nil
}

// poll returns at least one completion. With -e it does as rc_pingpong:
// it sleeps on the completion channel, arms the CQ again and polls, until
// a poll finds completions (open armed the CQ);
// otherwise it spins briefly first (verbs.CQ.Wait).
func (s *session) poll(wcs []verbs.WC) (int, error) {
	if !s.cfg.Events {
		return s.cq.Wait(context.Background(), wcs)
	}
	for {
		cq, err := s.ch.GetCQEvent(context.Background())
		if err != nil {
			return 0, fmt.Errorf("Failed to get cq_event: %w", err)
		}
		s.events++
		if cq != s.cq {
			return 0, errors.New("CQ event for unknown CQ")
		}
		if err := s.cq.ReqNotify(false); err != nil {
			return 0, fmt.Errorf("Couldn't request CQ notification: %w", err)
		}
		if n, err := s.cq.Poll(wcs); n > 0 || err != nil {
			return n, err
		}
	}
}

// postRecv posts up to n receives into the shared buffer.
func (s *session) postRecv(n int) int {
	wr := verbs.RecvWR{WRID: recvWRID, SGList: []verbs.SGE{s.mr.SGE(0, s.grh+s.cfg.Size)}}
	for i := range n {
		if s.qp.PostRecv(&wr) != nil {
			return i
		}
	}
	return n
}

func (s *session) postSend(rem *dest) error {
	return s.qp.PostSend(&verbs.SendWR{WRID: sendWRID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{s.mr.SGE(s.grh, s.cfg.Size)}, AH: s.ah, RemoteQPN: verbs.QPN(rem.qpn), RemoteQKey: qkey})
}

// pingpong runs the exchange loop of rc_pingpong (doc/tools.md §1.4) with
// the peer rem and prints its two result lines.
func (s *session) pingpong(stdout io.Writer, rem *dest) error {
	cfg := s.cfg
	client := cfg.Server != ""
	page := 4096
	msg := s.mr.Bytes()[s.grh:] // where the message is sent from and lands
	if client && cfg.Check {
		for i := 0; i < cfg.Size; i += page {
			msg[i] = 0
		}
	}
	pending := recvWRID
	if client {
		if err := s.postSend(rem); err != nil {
			return fmt.Errorf("Couldn't post send: %w", err)
		}
		pending |= sendWRID
	}
	start := time.Now()
	wcs := make([]verbs.WC, 2)
	rcnt, scnt := 0, 0
	for rcnt < cfg.Iters || scnt < cfg.Iters {
		n, err := s.poll(wcs)
		if err != nil {
			return fmt.Errorf("poll CQ failed: %w", err)
		}
		for i := range n {
			wc := &wcs[i]
			if wc.Status != verbs.WCSuccess {
				return fmt.Errorf("Failed status %s (%d) for wr_id %d", wc.Status, uint8(wc.Status), wc.WRID)
			}
			switch wc.WRID {
			case sendWRID:
				scnt++
			case recvWRID:
				if s.routs--; s.routs <= 1 {
					s.routs += s.postRecv(cfg.RxDepth - s.routs)
					if s.routs < cfg.RxDepth {
						return fmt.Errorf("Couldn't post receive (%d)", s.routs)
					}
				}
				rcnt++
			default:
				return fmt.Errorf("Completion for unknown wr_id %d", wc.WRID)
			}
			pending &^= int(wc.WRID)
			if scnt < cfg.Iters && pending == 0 {
				if err := s.postSend(rem); err != nil {
					return fmt.Errorf("Couldn't post send: %w", err)
				}
				pending = recvWRID | sendWRID
			}
		}
	}
	printResult(stdout, int64(cfg.Size)*int64(cfg.Iters)*2, cfg.Iters, time.Since(start).Microseconds())
	s.cq.AckEvents(s.events)
	if !client && cfg.Check {
		for i := 0; i < cfg.Size; i += page {
			if msg[i] != 0 {
				fmt.Fprintf(stdout, "invalid data in page %d\n", i/page)
			}
		}
	}
	return nil
}
