package perftest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/goverbs/goverbs/internal/oob"
	"github.com/goverbs/goverbs/verbs"
)

// session is one run's RDMA resources: a device, -q QPs sharing a send
// and a receive CQ, and one buffer of 2·q regions of BUFF bytes: QP i
// sends from (or reads into) region i, and the peer targets region q+i,
// the address QP i advertises (doc/tools.md §2.7).
type session struct {
	cfg   *Config
	dev   *verbs.Device
	pd    *verbs.PD
	scq   *verbs.CQ // send completions of every QP
	rcq   *verbs.CQ // receive completions of every QP
	qps   []*verbs.QP
	buf   *verbs.Buffer
	mr    *verbs.MR
	mtu   verbs.MTU // negotiated path MTU
	buff  int       // BUFF: the size of each region
	gidIx int
	my    []Dest // each QP's key message
	rem   []Dest // the peer's key message for each QP
	// ahs are, in UD tests, the address handles of the peer's QPs
	// (unacked.go).
	ahs []*verbs.AH
}

// local and remote are the offsets in the buffer of QP i's own region and
// of the region the peer targets through it.
func (s *session) local(i int) int  { return i * s.buff }
func (s *session) remote(i int) int { return (len(s.qps) + i) * s.buff }

// pollBWMaxSize is the largest message size for which the bandwidth
// tests poll their sockets (openSession).
const pollBWMaxSize = 4096

// openSession creates the device on the RoCE address — by default the IP
// this end of the control connection uses — and the QP, CQ and buffer.
func openSession(cfg *Config, c net.Conn, cycleBuffer int) (*session, error) {
	addr, err := oob.DeviceAddr(c, cfg.Addr)
	if err != nil {
		return nil, err
	}
	// The latency tests wait for one packet at a time, where a sleeping
	// receive loop costs a wake-up each. The BW tests stream: there a
	// polling receive loop drains the socket a datagram or two at a time,
	// paying a turn and an ACK for each drain, where a sleeping one wakes
	// to a batch. ib_write_bw 64 KiB, pinned, medians of 3 on the busy
	// 2-core machine: 0.97 GB/s with neither side polling, 0.79 with the
	// server polling adaptively (the default), 0.77 with both.
	//
	// Small messages are the exception: posts behind earlier work leave
	// in bursts (the engine's doorbell batching), one burst per tx-depth
	// round, so each side sleeps once a round and the wake-ups set the
	// rate. ib_write_bw pinned, both sides polling (oob.BusyPoll) vs
	// neither, paired runs on the busy 2-core machine: 8 B 0.41 → 0.68
	// M msg/s (median of 6, polling ahead in all 6), 4 KiB 0.28 → 0.39
	// M msg/s (of 5, ahead in all 5); 64 KiB still lost (3 of 4).
	busyPoll := time.Duration(verbs.BusyPollOff)
	if !cfg.Events && (cfg.Test.Lat || cfg.Size <= pollBWMaxSize) { // -e: no spinning anywhere
		busyPoll = oob.BusyPoll
	}
	dev, err := oob.OpenDevice(cfg.IBDev, addr, busyPoll)
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, dev: dev, gidIx: max(cfg.GIDIdx, 0)}
	gid, err := dev.QueryGID(1, s.gidIx)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("GID index %d: %s has one GID, index 0 (%v)", s.gidIx, dev.Name(), dev.Addr().Addr())
	}
	if err := s.alloc(cycleBuffer); err != nil {
		s.close()
		return nil, err
	}
	s.my = make([]Dest, len(s.qps))
	s.rem = make([]Dest, len(s.qps))
	for i, qp := range s.qps {
		s.my[i] = Dest{QPN: uint32(qp.QPN()), PSN: rand.Uint32() & 0xffffff, RKey: uint32(s.mr.RKey()),
			VAddr: s.mr.Addr() + uint64(s.remote(i)), GID: gid, OutReads: uint16(s.outReads())}
	}
	return s, nil
}

// outReads is what this side's responder accepts at once: READ and atomic
// tests offer -o or the device maximum, the others 1 (doc/tools.md §2.4).
func (s *session) outReads() int {
	if !s.cfg.Test.Verb.readLike() {
		return 1
	}
	if s.cfg.OutReads > 0 {
		return min(s.cfg.OutReads, s.dev.Query().MaxQPRdAtom)
	}
	return s.dev.Query().MaxQPRdAtom
}

func (s *session) alloc(cycleBuffer int) error {
	cfg := s.cfg
	var err error
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return fmt.Errorf("Couldn't allocate PD: %w", err)
	}
	s.buff = max(cfg.Size, cycleBuffer)
	if s.buf, err = verbs.AllocBuffer(2*cfg.QPs*s.buff + s.udSlack()); err != nil {
		return fmt.Errorf("Couldn't allocate work buf: %w", err)
	}
	access := verbs.AccessLocalWrite
	switch cfg.Test.Verb {
	case Write, Send:
		access |= verbs.AccessRemoteWrite
	case Read:
		access |= verbs.AccessRemoteRead
	case Atomic:
		access |= verbs.AccessRemoteAtomic
	}
	if s.mr, err = s.pd.RegMR(s.buf.Bytes(), access); err != nil {
		return fmt.Errorf("Couldn't allocate MR: %w", err)
	}
	// Each CQ has room for every QP's queue, so it cannot overflow.
	if s.scq, err = s.createCQ(cfg.QPs * cfg.TxDepth); err != nil {
		return fmt.Errorf("Couldn't create CQ: %w", err)
	}
	if s.rcq, err = s.createCQ(cfg.QPs * cfg.RxDepth); err != nil {
		return fmt.Errorf("Couldn't create CQ: %w", err)
	}
	for range cfg.QPs {
		qp, err := s.pd.CreateQP(&verbs.QPInitAttr{Type: cfg.Conn, SendCQ: s.scq, RecvCQ: s.rcq,
			Cap: verbs.QPCap{MaxSendWR: uint32(cfg.TxDepth), MaxRecvWR: uint32(cfg.RxDepth), MaxSendSGE: 1, MaxRecvSGE: 1,
				MaxInlineData: uint32(cfg.Inline)}})
		if err != nil {
			return fmt.Errorf("Couldn't create QP: %w", err)
		}
		s.qps = append(s.qps, qp)
		// UD has a Q_Key where the others have access rights.
		init := verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1, AccessFlags: qpAccess(cfg.Test.Verb), QKey: qkey}
		mask := verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags
		if cfg.Conn == verbs.QPTypeUD {
			mask = mask&^verbs.QPAttrAccessFlags | verbs.QPAttrQKey
		}
		if err := qp.Modify(&init, mask); err != nil {
			return fmt.Errorf("Failed to modify QP to INIT: %w", err)
		}
	}
	return nil
}

// qpAccess is what the peer may do through the QP (doc/tools.md §2.6).
func qpAccess(v Verb) verbs.AccessFlags {
	switch v {
	case Read:
		return verbs.AccessRemoteRead
	case Atomic:
		return verbs.AccessRemoteAtomic
	case Send:
		return verbs.AccessRemoteWrite | verbs.AccessLocalWrite
	}
	return verbs.AccessRemoteWrite
}

// connect moves every QP to RTR towards the peer's QP of the same index
// and, when rts is set, on to RTS, with perftest's attributes (doc/tools.md
// §2.6). perftest compares the GID types of the first QPs only.
func (s *session) connect(rts bool) error {
	if isMapped(s.rem[0].GID) != isMapped(s.my[0].GID) {
		return errors.New("Found Incompatibility issue with GID types. Please Try to use a different IP version.")
	}
	for i := range s.qps {
		if err := s.connectQP(i, rts); err != nil {
			return err
		}
	}
	return nil
}

// connectQP moves QP i to RTR and, with rts, to RTS with the attributes
// of its connection type (doc/tools.md §2.6, §2.11): RC's responder and
// retry attributes are not UC's, and a UD QP takes no path at all, but
// sends to an address handle of the peer, made with the path a RC QP
// would have had.
func (s *session) connectQP(i int, rts bool) error {
	qp, my, rem := s.qps[i], &s.my[i], &s.rem[i]
	conn := s.cfg.Conn
	path := verbs.AHAttr{IsGlobal: true, DGID: verbs.GID(rem.GID), HopLimit: 255, SL: uint8(s.cfg.SL),
		SGIDIndex: uint8(s.gidIx), PortNum: 1}
	rtr := verbs.QPAttr{State: verbs.QPStateRTR, PathMTU: s.mtu, DestQPN: verbs.QPN(rem.QPN), RQPSN: rem.PSN,
		MaxDestRdAtomic: uint8(my.OutReads), MinRNRTimer: 12, AH: path}
	mask := verbs.QPAttrState
	if conn != verbs.QPTypeUD {
		mask |= verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	}
	if conn == verbs.QPTypeRC {
		mask |= verbs.QPAttrMaxDestRdAtomic | verbs.QPAttrMinRNRTimer
	}
	if err := qp.Modify(&rtr, mask); err != nil {
		return fmt.Errorf("Failed to modify QP %d to RTR: %w", my.QPN, err)
	}
	if !rts {
		return nil
	}
	// max_rd_atomic is what the peer's responder accepts; rxe offers 128.
	rd := min(int(rem.OutReads), s.dev.Query().MaxQPRdAtom)
	a := verbs.QPAttr{State: verbs.QPStateRTS, Timeout: uint8(s.cfg.Timeout), RetryCnt: 7, RNRRetry: 7,
		SQPSN: my.PSN, MaxRdAtomic: uint8(max(rd, 1))}
	mask = verbs.QPAttrState | verbs.QPAttrSQPSN
	if conn == verbs.QPTypeRC {
		mask |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRdAtomic
	}
	if err := qp.Modify(&a, mask); err != nil {
		return fmt.Errorf("Failed to modify QP to RTS: %w", err)
	}
	if conn == verbs.QPTypeUD {
		return s.createAH(i, &path)
	}
	return nil
}

// isMapped reports whether a GID is an IPv4-mapped address.
func isMapped(g [16]byte) bool {
	return netip.AddrFrom16(g).Is4In6()
}

func (s *session) close() {
	for _, ah := range s.ahs {
		ah.Close()
	}
	oob.Release(s.dev, s.mr, s.qps...)
	s.closeCQs()
	if s.buf != nil {
		s.buf.Close()
	}
}
