package engine

import (
	"github.com/goverbs/goverbs/internal/ib"
	"github.com/goverbs/goverbs/internal/wire"
)

// wqeState tracks a send WQE through the requester and completer.
type wqeState uint8

const (
	wqePosted  wqeState = iota // queued, not started
	wqeSending                 // some packets sent
	wqeSent                    // all packets sent, waiting for the response
	wqeFailed                  // a local error stopped it; status says which
)

// sendWQE is a send queue slot. SGEs and inline data live in storage
// allocated with the slot, so posting copies and never allocates.
type sendWQE struct {
	wrID       uint64
	opcode     ib.WROpcode
	flags      ib.SendFlags
	imm        uint32 // immediate data, or the key SEND_WITH_INV and LOCAL_INV invalidate
	remoteAddr uint64
	rkey       ib.RKey
	compareAdd uint64
	swap       uint64
	sge        []SGE  // len = SGEs of this WR, cap = the QP's MaxSendSGE
	inline     []byte // inline data, cap = the QP's MaxInlineData
	length     uint32 // message length
	signaled   bool
	bind       *mwBind // of BIND_MW, made at the slot's first (mw.go)
	// The destination of a UD send (requester_ud.go).
	ah        *AH
	remoteQPN uint32
	qkey      uint32

	// Requester and completer progress, owned by the QP's turn.
	state    wqeState
	status   ib.WCStatus // for wqeFailed
	firstPSN wire.PSN
	lastPSN  wire.PSN
	sent     uint32  // payload bytes sent (SEND/WRITE)
	seq      uint32  // the requester's serial of its latest request (READ, atomic)
	sentAt   instant // when its request went out, until a round trip is sampled

	// READ recovery (completer_read.go), owned by the completer but for
	// the ask the requester sends.
	got     wire.PSN // the first response not yet in (all before it are)
	hi      wire.PSN // one past the highest response placed
	passAt  instant  // when a response past got was first seen
	passed  bool     // a response past the READ's end was seen: its stream ended
	beyond  uint8    // evidence that got is lost (dupThresh)
	ask     askState
	askFrom wire.PSN // what the last ask asked for
	askTo   wire.PSN
	askAt   instant
	askSeq  uint32 // the requester's serial of the ask
}

// recvWQE is a receive queue slot.
type recvWQE struct {
	wrID   uint64
	sge    []SGE // cap = the QP's MaxRecvSGE
	length uint32
}

// isReadAtomic reports whether the WQE needs a response carrying data and a
// responder resource: RDMA READ and the atomics.
func (w *sendWQE) isReadAtomic() bool {
	switch w.opcode {
	case ib.WRRDMARead, ib.WRAtomicCmpAndSwp, ib.WRAtomicFetchAndAdd:
		return true
	}
	return false
}

// isSend reports whether the WQE is a SEND of any kind, the operations
// rxe's rdma_sends counts.
func (w *sendWQE) isSend() bool {
	switch w.opcode {
	case ib.WRSend, ib.WRSendWithImm, ib.WRSendWithInv:
		return true
	}
	return false
}

func (w *sendWQE) isAtomic() bool {
	return w.opcode == ib.WRAtomicCmpAndSwp || w.opcode == ib.WRAtomicFetchAndAdd
}

// npkts returns how many PSNs the message uses at path MTU mtu.
func (w *sendWQE) npkts(mtu uint32) uint32 {
	if w.isAtomic() || w.length == 0 {
		return 1
	}
	return (w.length + mtu - 1) / mtu
}

// wcOpcodes maps send WR opcodes to completion opcodes.
var wcOpcodes = [...]ib.WCOpcode{
	ib.WRRDMAWrite:         ib.WCRDMAWrite,
	ib.WRRDMAWriteWithImm:  ib.WCRDMAWrite,
	ib.WRSend:              ib.WCSend,
	ib.WRSendWithImm:       ib.WCSend,
	ib.WRRDMARead:          ib.WCRDMARead,
	ib.WRAtomicCmpAndSwp:   ib.WCCompSwap,
	ib.WRAtomicFetchAndAdd: ib.WCFetchAdd,
	ib.WRLocalInv:          ib.WCLocalInv,
	ib.WRBindMW:            ib.WCBindMW,
	ib.WRSendWithInv:       ib.WCSend,
}

// position is where a packet sits in its message.
type position uint8

const (
	posFirst position = iota
	posMiddle
	posLast
	posOnly
)

// positionOf returns the position of a packet carrying n of the resid bytes
// still to go, given whether an earlier packet of the message was sent.
func positionOf(started bool, resid, mtu uint32) position {
	fits := resid <= mtu
	switch {
	case !started && fits:
		return posOnly
	case !started:
		return posFirst
	case fits:
		return posLast
	}
	return posMiddle
}

// rcOpcodes picks the RC opcode of a SEND or WRITE packet by WR opcode and
// position (doc/protocol.md §5.2); UC opcodes are the same plus 0x20.
var rcOpcodes = [...][4]wire.Opcode{
	ib.WRSend:             {wire.RCSendFirst, wire.RCSendMiddle, wire.RCSendLast, wire.RCSendOnly},
	ib.WRSendWithImm:      {wire.RCSendFirst, wire.RCSendMiddle, wire.RCSendLastWithImmediate, wire.RCSendOnlyWithImmediate},
	ib.WRRDMAWrite:        {wire.RCWriteFirst, wire.RCWriteMiddle, wire.RCWriteLast, wire.RCWriteOnly},
	ib.WRRDMAWriteWithImm: {wire.RCWriteFirst, wire.RCWriteMiddle, wire.RCWriteLastWithImmediate, wire.RCWriteOnlyWithImmediate},
	ib.WRSendWithInv:      {wire.RCSendFirst, wire.RCSendMiddle, wire.RCSendLastWithInvalidate, wire.RCSendOnlyWithInvalidate},
}

// readResponseOpcodes picks the READ response opcode by position.
var readResponseOpcodes = [4]wire.Opcode{
	posFirst: wire.RCReadResponseFirst, posMiddle: wire.RCReadResponseMiddle,
	posLast: wire.RCReadResponseLast, posOnly: wire.RCReadResponseOnly,
}
