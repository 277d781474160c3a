package pingpong

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/goverbs/goverbs/internal/oob"
	"github.com/goverbs/goverbs/internal/toolflag"
	"github.com/goverbs/goverbs/verbs"
)

// SRQProg is the name of rdma-core's SRQ ping-pong, whose options
// ParseArgs then takes (doc/tools.md §1.5).
const SRQProg = "ibv_srq_pingpong"

// maxSRQQPs is srq_pingpong's MAX_QP: its exchange always carries this
// many addresses each way, the unused ones all zeros.
const maxSRQQPs = 256

func srqOptions(c *Config) []toolflag.Option {
	c.NumQP = 16
	return []toolflag.Option{
		toolflag.Opt("q", "num-qp", "num", "number of QPs to use (default 16)", &c.NumQP),
	}
}

func checkSRQ(c *Config) error {
	if c.NumQP < 1 || c.NumQP > maxSRQQPs {
		return fmt.Errorf("invalid number of QPs %d (1..%d)", c.NumQP, maxSRQQPs)
	}
	if c.NumQP > c.RxDepth {
		return fmt.Errorf("rx_depth %d is too small for %d QPs -- must have at least one receive per QP.", c.RxDepth, c.NumQP)
	}
	return nil
}

// srqSession is srq_pingpong's resources: num_qp RC QPs receiving through
// one SRQ into one CQ, and the session's buffer, PD and device.
type srqSession struct {
	session
	srq     *verbs.SRQ
	qps     []*verbs.QP
	pending []int // per QP, as pending in rc_pingpong
	// free are the receive slots of the buffer not posted. The C tool
	// sends from and receives into one buffer, whatever QP a message comes
	// on; here the QPs' turns write on goroutines of their own, so each
	// posted receive has a slot of its own (after the send slot, 0), named
	// in its work request id above recvWRID's bits.
	free []int
}

// slotShift places the slot in a receive's work request id.
const slotShift = 8

// RunSRQ performs one run of ibv_srq_pingpong: the ping-pong of Run on
// each of NumQP QPs at once, every receive taken from one SRQ.
func RunSRQ(cfg Config, stdout io.Writer) error {
	c, err := oob.Connect(cfg.Server, cfg.Port, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := openSRQ(cfg, c)
	if err != nil {
		return err
	}
	if cfg.Stats != nil {
		defer cfg.Stats(s.dev) // after close, as Run's
	}
	defer s.close()
	my := make([]dest, maxSRQQPs)
	gid, err := s.dev.QueryGID(1, max(cfg.GIDIdx, 0))
	if err != nil {
		return fmt.Errorf("Could not get local gid for gid index %d", cfg.GIDIdx)
	}
	for i, qp := range s.qps {
		my[i] = dest{qpn: uint32(qp.QPN()), psn: rand.Uint32() & 0xffffff, gid: gid}
		printDest(stdout, "  local address: ", &my[i])
	}
	rem, err := s.exchange(c, my)
	if err != nil {
		return err
	}
	for i := range s.qps {
		printDest(stdout, "  remote address:", &rem[i])
	}
	return s.pingpong(stdout)
}

// openSRQ makes srq_pingpong's objects (doc/tools.md §1.5): a zeroed
// buffer, a CQ of rx_depth + num_qp, an SRQ of rx_depth and the QPs in
// INIT, and posts rx_depth receives to the SRQ.
func openSRQ(cfg Config, c net.Conn) (*srqSession, error) {
	dev, err := openDevice(cfg, c)
	if err != nil {
		return nil, err
	}
	s := &srqSession{session: session{cfg: cfg, dev: dev}}
	if s.pd, err = dev.AllocPD(); err != nil {
		return nil, s.fail("Couldn't allocate PD", err)
	}
	if s.mr, err = s.pd.RegMR(make([]byte, (cfg.RxDepth+1)*cfg.Size), verbs.AccessLocalWrite); err != nil {
		return nil, s.fail("Couldn't register MR", err)
	}
	if s.cq, err = dev.CreateCQ(cfg.RxDepth + cfg.NumQP); err != nil {
		return nil, s.fail("Couldn't create CQ", err)
	}
	if s.srq, err = s.pd.CreateSRQ(&verbs.SRQAttr{MaxWR: uint32(cfg.RxDepth), MaxSGE: 1}); err != nil {
		return nil, s.fail("Couldn't create SRQ", err)
	}
	for i := range cfg.NumQP {
		qp, err := s.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq, SRQ: s.srq,
			Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
		if err != nil {
			return nil, s.fail(fmt.Sprintf("Couldn't create QP[%d]", i), err)
		}
		s.qps = append(s.qps, qp)
		init := verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1}
		if err := qp.Modify(&init, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
			return nil, s.fail(fmt.Sprintf("Failed to modify QP[%d] to INIT", i), err)
		}
	}
	s.pending = make([]int, cfg.NumQP)
	for i := range cfg.RxDepth {
		s.free = append(s.free, i+1)
	}
	if s.routs = s.postRecv(cfg.RxDepth); s.routs < cfg.RxDepth {
		return nil, s.fail(fmt.Sprintf("Couldn't post receive (%d)", s.routs), nil)
	}
	return s, nil
}

func (s *srqSession) close() { oob.Release(s.dev, s.mr, s.qps...) }

// postRecv posts up to n receives, each into a free slot, through the SRQ.
func (s *srqSession) postRecv(n int) int {
	for i := range n {
		slot := s.free[len(s.free)-1]
		wr := verbs.RecvWR{WRID: uint64(slot)<<slotShift | recvWRID, SGList: []verbs.SGE{s.mr.SGE(slot*s.cfg.Size, s.cfg.Size)}}
		if s.srq.PostRecv(&wr) != nil {
			return i
		}
		s.free = s.free[:len(s.free)-1]
	}
	return n
}

// exchange swaps the 256 addresses each way (doc/tools.md §1.5) and
// connects the QPs: the server before it answers, the client after
// "done".
func (s *srqSession) exchange(c net.Conn, my []dest) ([]dest, error) {
	server := s.cfg.Server == ""
	if !server {
		if err := writeDests(c, my); err != nil {
			return nil, err
		}
	}
	rem, err := readDests(c)
	if err != nil {
		return nil, err
	}
	if server {
		if err := s.connect(my, rem); err != nil {
			return nil, fmt.Errorf("Couldn't connect to remote QP: %w", err)
		}
		if err := writeDests(c, my); err != nil {
			return nil, err
		}
		done := make([]byte, 5)
		if err := oob.ReadFull(c, done); err != nil || string(done) != "done\x00" {
			return nil, fmt.Errorf("Couldn't read \"done\" message: %v", err)
		}
		return rem, nil
	}
	if _, err := c.Write([]byte("done\x00")); err != nil {
		return nil, fmt.Errorf("Couldn't send \"done\" message: %w", err)
	}
	return rem, s.connect(my, rem)
}

func writeDests(c net.Conn, ds []dest) error {
	for i := range ds {
		if _, err := c.Write(ds[i].marshal()); err != nil {
			return fmt.Errorf("Couldn't send local address: %w", err)
		}
	}
	return nil
}

func readDests(c net.Conn) ([]dest, error) {
	ds := make([]dest, maxSRQQPs)
	buf := make([]byte, msgSize)
	read := oob.ReadFirst
	for i := range ds {
		if err := read(c, buf); err != nil {
			return nil, fmt.Errorf("Couldn't read remote address [%d]: %w", i, err)
		}
		read = oob.ReadFull
		var err error
		if ds[i], err = parseDest(buf); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// connect moves QP i to RTR and RTS towards the peer's QP i.
func (s *srqSession) connect(my, rem []dest) error {
	for i, qp := range s.qps {
		if err := connectRC(qp, &s.cfg, &my[i], &rem[i]); err != nil {
			return fmt.Errorf("QP[%d]: %w", i, err)
		}
	}
	return nil
}

func (s *srqSession) postSend(i int) error {
	return s.qps[i].PostSend(&verbs.SendWR{WRID: sendWRID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{s.mr.SGE(0, s.cfg.Size)}})
}

// qpIndex returns the index of the QP numbered qpn, or -1.
func (s *srqSession) qpIndex(qpn verbs.QPN) int {
	for i, qp := range s.qps {
		if qp.QPN() == qpn {
			return i
		}
	}
	return -1
}

// pingpong runs srq_pingpong's loop (doc/tools.md §1.5): each QP sends
// again once its send and a receive on it completed, until iters sends
// and iters receives completed in all; the receives are topped up to
// rx_depth whenever no more than num_qp are left.
func (s *srqSession) pingpong(stdout io.Writer) error {
	cfg := s.cfg
	for i := range s.qps {
		s.pending[i] = recvWRID
		if cfg.Server != "" {
			if err := s.postSend(i); err != nil {
				return fmt.Errorf("Couldn't post send: %w", err)
			}
			s.pending[i] |= sendWRID
		}
	}
	start := time.Now()
	wcs := make([]verbs.WC, cfg.NumQP+cfg.RxDepth)
	rcnt, scnt := 0, 0
	for rcnt < cfg.Iters || scnt < cfg.Iters {
		n, err := s.poll(wcs)
		if err != nil {
			return fmt.Errorf("poll CQ failed: %w", err)
		}
		for i := range n {
			wc := &wcs[i]
			id := int(wc.WRID & (1<<slotShift - 1))
			if wc.Status != verbs.WCSuccess {
				return fmt.Errorf("Failed status %s (%d) for wr_id %d", wc.Status, uint8(wc.Status), id)
			}
			q := s.qpIndex(wc.QPNum)
			if q < 0 {
				return fmt.Errorf("Couldn't find QPN %06x", uint32(wc.QPNum))
			}
			switch id {
			case sendWRID:
				scnt++
			case recvWRID:
				s.free = append(s.free, int(wc.WRID>>slotShift))
				if s.routs--; s.routs <= cfg.NumQP {
					s.routs += s.postRecv(cfg.RxDepth - s.routs)
					if s.routs < cfg.RxDepth {
						return fmt.Errorf("Couldn't post receive (%d)", s.routs)
					}
				}
				rcnt++
			default:
				return fmt.Errorf("Completion for unknown wr_id %d", wc.WRID)
			}
			s.pending[q] &^= id
			if scnt < cfg.Iters && s.pending[q] == 0 {
				if err := s.postSend(q); err != nil {
					return fmt.Errorf("Couldn't post send: %w", err)
				}
				s.pending[q] = recvWRID | sendWRID
			}
		}
	}
	printResult(stdout, int64(cfg.Size)*int64(cfg.Iters)*2, cfg.Iters, time.Since(start).Microseconds())
	return nil
}
