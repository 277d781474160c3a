package verbs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
	"github.com/goverbs/goverbs/verbs/verbstest"
)

// mwFixture is a connected pair whose side B has a 64 KiB region with no
// remote right of its own, only MW_BIND: the peer reaches it through B's
// windows alone. A has a buffer to write from and read into.
type mwFixture struct {
	p       *verbstest.Pair
	mr      *verbs.MR
	pattern []byte
	src     *verbs.MR
	mw      *verbs.MW
}

const mwRegion = 64 << 10

func newMWFixture(t *testing.T, link verbstest.Link, typ verbs.MWType) *mwFixture {
	t.Helper()
	f := &mwFixture{p: verbstest.New(t, verbstest.Options{Link: link})}
	buf := make([]byte, mwRegion)
	for i := range buf {
		buf[i] = byte(i*13 + 7)
	}
	f.pattern = bytes.Clone(buf)
	var err error
	if f.mr, err = f.p.B.PD.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessMWBind); err != nil {
		t.Fatal(err)
	}
	f.src = f.p.A.Buffer(t, mwRegion, 0x3c)
	if f.mw, err = f.p.B.PD.AllocMW(typ); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.mw.Close(); f.mr.Close() })
	return f
}

// bindWR is a signaled BIND_MW of [off, off+n) of B's region with the
// window's next rkey.
func (f *mwFixture) bindWR(off, n int, access verbs.AccessFlags) *verbs.SendWR {
	return &verbs.SendWR{WRID: 0xb1, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, BindMW: verbs.BindMW{
		MW: f.mw, RKey: verbs.IncRKey(f.mw.RKey()),
		BindInfo: verbs.MWBindInfo{MR: f.mr, Addr: f.mr.Addr() + uint64(off), Length: uint64(n), MWAccessFlags: access}}}
}

// bind binds the window through B's QP — a BIND_MW work request for a
// type 2 window, QP.BindMW for a type 1 — waits for its completion and
// returns the window's new rkey.
func (f *mwFixture) bind(t *testing.T, off, n int, access verbs.AccessFlags) verbs.RKey {
	t.Helper()
	old := f.mw.RKey()
	wr := f.bindWR(off, n, access)
	if f.mw.Type() == verbs.MWType1 {
		if err := f.p.B.QP.BindMW(f.mw, &verbs.MWBind{WRID: wr.WRID, SendFlags: wr.Flags, BindInfo: wr.BindMW.BindInfo}); err != nil {
			t.Fatal(err)
		}
	} else {
		post(t, f.p.B.QP, wr)
	}
	expectWC(t, verbstest.MustPoll(t, f.p.B.SendCQ, 1)[0], verbs.WC{WRID: 0xb1, Status: verbs.WCSuccess, Opcode: verbs.WCBindMW,
		QPNum: f.p.B.QP.QPN()})
	k := f.mw.RKey()
	if k != verbs.IncRKey(old) {
		t.Fatalf("bind gave rkey %#x, want %#x (the next after %#x)", uint32(k), uint32(verbs.IncRKey(old)), uint32(old))
	}
	return k
}

// remote posts wr on A's QP and returns its completion.
func (f *mwFixture) remote(t *testing.T, wr *verbs.SendWR) verbs.WC {
	t.Helper()
	wr.Flags |= verbs.SendSignaled
	post(t, f.p.A.QP, wr)
	return verbstest.MustPoll(t, f.p.A.SendCQ, 1)[0]
}

// write writes n bytes of A's buffer (from offset off) at offset off of
// B's region through rkey.
func (f *mwFixture) write(t *testing.T, rkey verbs.RKey, off, n int) verbs.WC {
	t.Helper()
	return f.remote(t, &verbs.SendWR{WRID: 0xa1, Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{f.src.SGE(off, n)},
		RemoteAddr: f.mr.Addr() + uint64(off), RKey: rkey})
}

// holds checks that B's region is its pattern except for the ranges A
// wrote: bytes [off, off+n) of each are A's.
func (f *mwFixture) holds(t *testing.T, written ...[2]int) {
	t.Helper()
	want := bytes.Clone(f.pattern)
	for _, w := range written {
		copy(want[w[0]:w[0]+w[1]], f.src.Bytes()[w[0]:])
	}
	if got := f.mr.Bytes(); !bytes.Equal(got, want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		t.Fatalf("B's region differs first at byte %d: %#x, want %#x", i, got[i], want[i])
	}
}

func wantStatus(t *testing.T, what string, wc verbs.WC, status verbs.WCStatus) {
	t.Helper()
	if wc.Status != status {
		t.Fatalf("%s: %v (%+v), want %v", what, wc.Status, wc, status)
	}
}

var mwTypes = []verbs.MWType{verbs.MWType1, verbs.MWType2}

// A bound window gives the peer its range, with its rights, and nothing
// else: WRITE, READ and atomics land exactly where the window says.
func TestMWWriteReadAtomic(t *testing.T) {
	for _, link := range links {
		for _, typ := range mwTypes {
			t.Run(fmt.Sprintf("%v/%v", link, typ), func(t *testing.T) {
				f := newMWFixture(t, link, typ)
				const off, n = 4096 + 8, 3*4096 + 5 // several packets at either link's MTU
				rkey := f.bind(t, off, n, verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
				wantStatus(t, "WRITE of the whole window", f.write(t, rkey, off, n), verbs.WCSuccess)
				f.holds(t, [2]int{off, n})
				local := f.p.A.Buffer(t, n, 0)
				clear(local.Bytes())
				wc := f.remote(t, &verbs.SendWR{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{local.SGE(0, n)},
					RemoteAddr: f.mr.Addr() + off, RKey: rkey})
				wantStatus(t, "READ of the whole window", wc, verbs.WCSuccess)
				if !bytes.Equal(local.Bytes(), f.mr.Bytes()[off:off+n]) {
					t.Fatal("READ through the window returned other bytes than the window's")
				}
				at := (off + n - 8) &^ 7 // the last aligned word inside
				before := binary.NativeEndian.Uint64(f.mr.Bytes()[at:])
				wc = f.remote(t, &verbs.SendWR{Opcode: verbs.WRAtomicFetchAndAdd, SGList: []verbs.SGE{local.SGE(0, 8)},
					RemoteAddr: f.mr.Addr() + uint64(at), RKey: rkey, CompareAdd: 5})
				wantStatus(t, "FETCH_ADD in the window", wc, verbs.WCSuccess)
				if got := binary.NativeEndian.Uint64(local.Bytes()); got != before {
					t.Errorf("FETCH_ADD returned %#x, want %#x", got, before)
				}
				if got := binary.NativeEndian.Uint64(f.mr.Bytes()[at:]); got != before+5 {
					t.Errorf("FETCH_ADD left %#x, want %#x", got, before+5)
				}
			})
		}
	}
}

// What a window does not allow is a remote access error at the requester
// (REM_ACCESS_ERR, NAK code 2), and B's memory stays as it was.
func TestMWRemoteRefused(t *testing.T) {
	const off, n = 8192, 4096
	rw := verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	for _, link := range links {
		for _, typ := range mwTypes {
			for _, c := range []struct {
				name   string
				access verbs.AccessFlags
				wr     func(f *mwFixture, rkey verbs.RKey, local *verbs.MR) *verbs.SendWR
			}{
				{"WRITE one byte past the end", rw, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{l.SGE(0, 2)}, RemoteAddr: f.mr.Addr() + off + n - 1, RKey: k}
				}},
				{"WRITE one byte before the start", rw, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{l.SGE(0, 2)}, RemoteAddr: f.mr.Addr() + off - 1, RKey: k}
				}},
				{"READ past the end", rw, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{l.SGE(0, n+1)}, RemoteAddr: f.mr.Addr() + off, RKey: k}
				}},
				{"WRITE through a read-only window", verbs.AccessRemoteRead, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{l.SGE(0, 8)}, RemoteAddr: f.mr.Addr() + off, RKey: k}
				}},
				{"READ through a write-only window", verbs.AccessRemoteWrite, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{l.SGE(0, 8)}, RemoteAddr: f.mr.Addr() + off, RKey: k}
				}},
				{"atomic through a window without REMOTE_ATOMIC", rw, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, SGList: []verbs.SGE{l.SGE(0, 8)}, RemoteAddr: f.mr.Addr() + off, RKey: k}
				}},
				{"WRITE with the region's own rkey (no remote right)", rw, func(f *mwFixture, _ verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{l.SGE(0, 8)}, RemoteAddr: f.mr.Addr() + off, RKey: f.mr.RKey()}
				}},
				{"WRITE with the rkey before the bind", rw, func(f *mwFixture, k verbs.RKey, l *verbs.MR) *verbs.SendWR {
					return &verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{l.SGE(0, 8)}, RemoteAddr: f.mr.Addr() + off, RKey: k - 1&0xff | k&^0xff}
				}},
			} {
				t.Run(fmt.Sprintf("%v/%v/%s", link, typ, c.name), func(t *testing.T) {
					f := newMWFixture(t, link, typ)
					rkey := f.bind(t, off, n, c.access)
					local := f.p.A.Buffer(t, n+1, 0x99)
					wantStatus(t, c.name, f.remote(t, c.wr(f, rkey, local)), verbs.WCRemAccessErr)
					f.holds(t)
				})
			}
		}
	}
}

// A type 2 window is reached only through the QP that bound it (type 2B);
// a type 1 window through any QP of its PD.
func TestMWOtherQP(t *testing.T) {
	for _, link := range links {
		for _, typ := range mwTypes {
			t.Run(fmt.Sprintf("%v/%v", link, typ), func(t *testing.T) {
				f := newMWFixture(t, link, typ)
				rkey := f.bind(t, 0, 64, verbs.AccessRemoteWrite)
				q := f.p.Another(t, verbstest.Options{})
				wr := &verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{f.src.SGE(0, 64)},
					RemoteAddr: f.mr.Addr(), RKey: rkey}
				post(t, q.A.QP, wr)
				wc := verbstest.MustPoll(t, q.A.SendCQ, 1)[0]
				if typ == verbs.MWType1 {
					wantStatus(t, "type 1 window through another QP", wc, verbs.WCSuccess)
					f.holds(t, [2]int{0, 64})
					return
				}
				wantStatus(t, "type 2 window through another QP", wc, verbs.WCRemAccessErr)
				f.holds(t)
				// Through the QP that bound it, it still works.
				wantStatus(t, "through the binding QP", f.write(t, rkey, 0, 64), verbs.WCSuccess)
				f.holds(t, [2]int{0, 64})
			})
		}
	}
}

// After LOCAL_INV the window's rkey is refused, and nothing lands.
func TestMWLocalInvalidate(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			f := newMWFixture(t, link, verbs.MWType2)
			rkey := f.bind(t, 100, 200, verbs.AccessRemoteWrite)
			wantStatus(t, "WRITE before LOCAL_INV", f.write(t, rkey, 100, 100), verbs.WCSuccess)
			post(t, f.p.B.QP, &verbs.SendWR{WRID: 0x1f, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, InvalidateRKey: rkey})
			expectWC(t, verbstest.MustPoll(t, f.p.B.SendCQ, 1)[0], verbs.WC{WRID: 0x1f, Status: verbs.WCSuccess, Opcode: verbs.WCLocalInv,
				QPNum: f.p.B.QP.QPN()})
			wantStatus(t, "WRITE after LOCAL_INV", f.write(t, rkey, 200, 100), verbs.WCRemAccessErr)
			f.holds(t, [2]int{100, 100})
		})
	}
}

// SEND WITH INVALIDATE delivers its message, invalidates the window before
// the receive completes (WITH_INV, the rkey in the completion), and the
// window is refused from then on: an invalidated window used remotely.
func TestMWSendWithInvalidate(t *testing.T) {
	for _, link := range links {
		for _, n := range []int{0, 7, 4096 + 9} {
			t.Run(fmt.Sprintf("%v/%d", link, n), func(t *testing.T) {
				f := newMWFixture(t, link, verbs.MWType2)
				rkey := f.bind(t, 0, 4096, verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
				wantStatus(t, "WRITE through the window", f.write(t, rkey, 0, 4096), verbs.WCSuccess)
				dst := f.p.B.Buffer(t, n+8, 0)
				clear(dst.Bytes())
				postRecv(t, f.p.B.QP, &verbs.RecvWR{WRID: 0x77, SGList: []verbs.SGE{dst.SGE(0, n+8)}})
				wc := f.remote(t, &verbs.SendWR{WRID: 0x55, Opcode: verbs.WRSendWithInv, SGList: []verbs.SGE{f.src.SGE(0, n)},
					InvalidateRKey: rkey})
				expectWC(t, wc, verbs.WC{WRID: 0x55, Status: verbs.WCSuccess, Opcode: verbs.WCSend, ByteLen: uint32(n), QPNum: f.p.A.QP.QPN()})
				got := verbstest.MustPoll(t, f.p.B.RecvCQ, 1)[0]
				expectWC(t, got, verbs.WC{WRID: 0x77, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: uint32(n),
					Imm: uint32(rkey), Flags: verbs.WCFlagWithInv, QPNum: f.p.B.QP.QPN(), SrcQP: f.p.A.QP.QPN()})
				if got.InvalidatedRKey() != rkey {
					t.Errorf("InvalidatedRKey %#x, want %#x", uint32(got.InvalidatedRKey()), uint32(rkey))
				}
				if !bytes.Equal(dst.Bytes()[:n], f.src.Bytes()[:n]) {
					t.Error("the message did not arrive as sent")
				}
				// The invalidated window, used remotely.
				wantStatus(t, "READ after SEND_WITH_INV", f.remote(t, &verbs.SendWR{Opcode: verbs.WRRDMARead,
					SGList: []verbs.SGE{f.src.SGE(0, 8)}, RemoteAddr: f.mr.Addr(), RKey: rkey}), verbs.WCRemAccessErr)
				f.holds(t, [2]int{0, 4096})
			})
		}
	}
}

// A SEND WITH INVALIDATE that names no window the responder may invalidate
// is an invalid request: the sender gets REM_INV_REQ_ERR, the receive
// fails, and nothing is invalidated.
func TestMWSendWithInvalidateRefused(t *testing.T) {
	for _, link := range links {
		for _, c := range []struct {
			name string
			key  func(f *mwFixture, rkey verbs.RKey) verbs.RKey
		}{
			{"a region's rkey", func(f *mwFixture, _ verbs.RKey) verbs.RKey { return f.mr.RKey() }},
			{"a stale window rkey", func(_ *mwFixture, k verbs.RKey) verbs.RKey { return k ^ 1 }},
			{"no key at all", func(*mwFixture, verbs.RKey) verbs.RKey { return 0 }},
		} {
			t.Run(fmt.Sprintf("%v/%s", link, c.name), func(t *testing.T) {
				f := newMWFixture(t, link, verbs.MWType2)
				rkey := f.bind(t, 0, 64, verbs.AccessRemoteWrite)
				postRecv(t, f.p.B.QP, &verbs.RecvWR{WRID: 0x77, SGList: []verbs.SGE{f.p.B.Buffer(t, 64, 0).SGE(0, 64)}})
				wantStatus(t, "SEND_WITH_INV", f.remote(t, &verbs.SendWR{Opcode: verbs.WRSendWithInv,
					SGList: []verbs.SGE{f.src.SGE(0, 8)}, InvalidateRKey: c.key(f, rkey)}), verbs.WCRemInvReqErr)
				wc := verbstest.MustPoll(t, f.p.B.RecvCQ, 1)[0]
				if wc.WRID != 0x77 || wc.Status != verbs.WCRemInvReqErr {
					t.Errorf("receive completion %+v, want REM_INV_REQ_ERR", wc)
				}
				// B's QP is in the error state, but the window still stands.
				if k, err := f.p.B.QP.State(), error(nil); k != verbs.QPStateErr || err != nil {
					t.Errorf("B's QP is %v", k)
				}
				post(t, f.p.B.QP, &verbs.SendWR{WRID: 1, Opcode: verbs.WRLocalInv, InvalidateRKey: rkey})
				if wc := verbstest.MustPoll(t, f.p.B.SendCQ, 1)[0]; wc.Status != verbs.WCWRFlushErr {
					t.Errorf("LOCAL_INV on the failed QP: %+v", wc)
				}
				if err := f.mr.Close(); !errors.Is(err, verbs.ErrBusy) {
					t.Errorf("MR.Close with the window still bound = %v, want ErrBusy", err)
				}
			})
		}
	}
}

// A type 2 window rebound with a new rkey after its invalidation, and a
// type 1 window rebound at once: the old rkey is refused, the new one
// reaches the new range.
func TestMWRebind(t *testing.T) {
	for _, link := range links {
		for _, typ := range mwTypes {
			t.Run(fmt.Sprintf("%v/%v", link, typ), func(t *testing.T) {
				f := newMWFixture(t, link, typ)
				k1 := f.bind(t, 0, 4096, verbs.AccessRemoteWrite)
				wantStatus(t, "WRITE through the first binding", f.write(t, k1, 0, 64), verbs.WCSuccess)
				if typ == verbs.MWType2 {
					post(t, f.p.B.QP, &verbs.SendWR{Opcode: verbs.WRLocalInv, InvalidateRKey: k1})
				}
				k2 := f.bind(t, 8192, 4096, verbs.AccessRemoteWrite)
				wantStatus(t, "WRITE through the new binding", f.write(t, k2, 8192, 64), verbs.WCSuccess)
				wantStatus(t, "WRITE through the old rkey", f.write(t, k1, 64, 64), verbs.WCRemAccessErr)
				f.holds(t, [2]int{0, 64}, [2]int{8192, 64})
			})
		}
	}
}

// Binds and local invalidations that cannot be done complete with
// MW_BIND_ERR ("memory management operation error"), the QP goes to the
// error state and what follows is flushed; the window stays as it was.
func TestMWBindErrors(t *testing.T) {
	rw := verbs.AccessRemoteWrite
	for _, link := range links {
		for _, c := range []struct {
			name string
			typ  verbs.MWType
			wr   func(t *testing.T, f *mwFixture) *verbs.SendWR
		}{
			{"region without MW_BIND", verbs.MWType2, func(t *testing.T, f *mwFixture) *verbs.SendWR {
				wr := f.bindWR(0, 64, rw)
				wr.BindMW.BindInfo.MR = f.p.B.Buffer(t, 64, 0)
				wr.BindMW.BindInfo.Addr = wr.BindMW.BindInfo.MR.Addr()
				return wr
			}},
			{"range past the region", verbs.MWType2, func(_ *testing.T, f *mwFixture) *verbs.SendWR { return f.bindWR(mwRegion-8, 16, rw) }},
			{"zero length (type 2)", verbs.MWType2, func(_ *testing.T, f *mwFixture) *verbs.SendWR { return f.bindWR(0, 0, rw) }},
			{"writable window on a region without LOCAL_WRITE", verbs.MWType2, func(t *testing.T, f *mwFixture) *verbs.SendWR {
				mr, err := f.p.B.PD.RegMR(make([]byte, 64), verbs.AccessMWBind)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mr.Close() })
				wr := f.bindWR(0, 64, rw)
				wr.BindMW.BindInfo.MR, wr.BindMW.BindInfo.Addr = mr, mr.Addr()
				return wr
			}},
			{"window of another PD", verbs.MWType2, func(t *testing.T, f *mwFixture) *verbs.SendWR {
				pd, err := f.p.B.Dev.AllocPD()
				if err != nil {
					t.Fatal(err)
				}
				mw, err := pd.AllocMW(verbs.MWType2)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mw.Close() })
				wr := f.bindWR(0, 64, rw)
				wr.BindMW.MW = mw
				return wr
			}},
			{"zero-based window", verbs.MWType2, func(_ *testing.T, f *mwFixture) *verbs.SendWR {
				return f.bindWR(0, 64, rw|verbs.AccessZeroBased)
			}},
			{"type 2 window bound twice", verbs.MWType2, func(t *testing.T, f *mwFixture) *verbs.SendWR {
				f.bind(t, 0, 64, rw)
				return f.bindWR(64, 64, rw)
			}},
			{"LOCAL_INV of a region's rkey", verbs.MWType2, func(_ *testing.T, f *mwFixture) *verbs.SendWR {
				return &verbs.SendWR{Opcode: verbs.WRLocalInv, InvalidateRKey: f.mr.RKey()}
			}},
			{"LOCAL_INV of an unbound window", verbs.MWType2, func(_ *testing.T, f *mwFixture) *verbs.SendWR {
				return &verbs.SendWR{Opcode: verbs.WRLocalInv, InvalidateRKey: f.mw.RKey()}
			}},
			{"LOCAL_INV of a type 1 window", verbs.MWType1, func(t *testing.T, f *mwFixture) *verbs.SendWR {
				return &verbs.SendWR{Opcode: verbs.WRLocalInv, InvalidateRKey: f.bind(t, 0, 64, rw)}
			}},
		} {
			t.Run(fmt.Sprintf("%v/%s", link, c.name), func(t *testing.T) {
				f := newMWFixture(t, link, c.typ)
				wr := c.wr(t, f)
				wr.WRID, wr.Flags = 0xe1, 0 // failures complete, signaled or not
				wr.Next = &verbs.SendWR{WRID: 0xe2, Opcode: verbs.WRSend}
				post(t, f.p.B.QP, wr)
				wcs := verbstest.MustPoll(t, f.p.B.SendCQ, 2)
				if wcs[0].WRID != 0xe1 || wcs[0].Status != verbs.WCMWBindErr || wcs[1].WRID != 0xe2 || wcs[1].Status != verbs.WCWRFlushErr {
					t.Errorf("completions %+v, want MW_BIND_ERR then a flush", wcs)
				}
				if s := f.p.B.QP.State(); s != verbs.QPStateErr {
					t.Errorf("QP %v after the failure, want ERR", s)
				}
			})
		}
	}
}

// What posting refuses at once.
func TestMWPostErrors(t *testing.T) {
	f := newMWFixture(t, verbstest.Mem, verbs.MWType2)
	t1, err := f.p.B.PD.AllocMW(verbs.MWType1)
	if err != nil {
		t.Fatal(err)
	}
	defer t1.Close()
	pd2, err := f.p.B.Dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	other, err := pd2.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessMWBind)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, c := range []struct {
		name string
		do   func() error
		want error
	}{
		{"BIND_MW without a window", func() error { return f.p.B.QP.PostSend(&verbs.SendWR{Opcode: verbs.WRBindMW}) }, verbs.ErrNoMW},
		{"LOCAL_INV with an SGE", func() error {
			return f.p.B.QP.PostSend(&verbs.SendWR{Opcode: verbs.WRLocalInv, SGList: []verbs.SGE{f.src.SGE(0, 1)}})
		}, verbs.ErrLocalOpData},
		{"BindMW of a type 2 window", func() error { return f.p.B.QP.BindMW(f.mw, &verbs.MWBind{}) }, verbs.ErrInvalidArgument},
		{"BindMW of a range without MR", func() error {
			return f.p.B.QP.BindMW(t1, &verbs.MWBind{BindInfo: verbs.MWBindInfo{Addr: 1, Length: 8}})
		}, verbs.ErrInvalidArgument},
		{"BindMW to an MR of another PD", func() error {
			return f.p.B.QP.BindMW(t1, &verbs.MWBind{BindInfo: verbs.MWBindInfo{MR: other, Addr: other.Addr(), Length: 8}})
		}, verbs.ErrInvalidArgument},
	} {
		if err := c.do(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	closed, err := f.p.B.PD.AllocMW(verbs.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	wr := f.bindWR(0, 8, verbs.AccessRemoteRead)
	wr.BindMW.MW = closed
	if err := f.p.B.QP.PostSend(wr); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("BIND_MW of a closed window = %v, want ErrClosed", err)
	}
	// A refused BindMW leaves the type 1 window's rkey as it was.
	k := t1.RKey()
	if err := f.p.A.QP.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.p.A.QP.BindMW(t1, &verbs.MWBind{}); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("BindMW on a closed QP = %v, want ErrClosed", err)
	}
	if t1.RKey() != k {
		t.Errorf("rkey %#x after a refused bind, want %#x", uint32(t1.RKey()), uint32(k))
	}
}

// A type 1 window bound with no range is unbound: its rkey reaches
// nothing, and its region may go. A zero-length RDMA access checks no
// key at all (doc/protocol.md §12.3), so even an unbound window's rkey
// passes one.
func TestMWZeroLength(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			f := newMWFixture(t, link, verbs.MWType1)
			k1 := f.bind(t, 0, 64, verbs.AccessRemoteWrite)
			if err := f.p.B.QP.BindMW(f.mw, &verbs.MWBind{WRID: 0xb1, SendFlags: verbs.SendSignaled}); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, "zero-length bind", verbstest.MustPoll(t, f.p.B.SendCQ, 1)[0], verbs.WCSuccess)
			k2 := f.mw.RKey()
			if k2 == k1 {
				t.Fatal("the zero-length bind kept the rkey")
			}
			wantStatus(t, "zero-length WRITE with the unbound rkey", f.write(t, k2, 0, 0), verbs.WCSuccess)
			if err := f.mr.Close(); err != nil {
				t.Errorf("MR.Close with its only window unbound: %v", err)
			}
			wantStatus(t, "WRITE with the first rkey", f.write(t, k1, 0, 8), verbs.WCRemAccessErr)
		})
	}
}

func TestMWLifecycle(t *testing.T) {
	f := newMWFixture(t, verbstest.Mem, verbs.MWType2)
	for _, typ := range []verbs.MWType{0, 3} {
		if mw, err := f.p.B.PD.AllocMW(typ); !errors.Is(err, verbs.ErrInvalidArgument) {
			t.Errorf("AllocMW(%v) = %v, %v; want ErrInvalidArgument", typ, mw, err)
		}
	}
	if f.mw.RKey() == 0 || f.mw.Type() != verbs.MWType2 || f.mw.Type().String() != "IBV_MW_TYPE_2" {
		t.Errorf("new window: rkey %#x type %v", uint32(f.mw.RKey()), f.mw.Type())
	}
	if verbs.IncRKey(0x123456ff) != 0x12345600 || verbs.IncRKey(0x12345601) != 0x12345602 {
		t.Error("IncRKey does not step the low byte only")
	}
	f.bind(t, 0, 64, verbs.AccessRemoteRead)
	if err := f.mr.Close(); !errors.Is(err, verbs.ErrBusy) {
		t.Errorf("MR.Close with a window bound = %v, want ErrBusy", err)
	}
	if err := f.p.B.PD.Close(); !errors.Is(err, verbs.ErrBusy) {
		t.Errorf("PD.Close with a window = %v, want ErrBusy", err)
	}
	// Closing the window invalidates it: its rkey dies, its region may go.
	rkey := f.mw.RKey()
	if err := f.mw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.mw.Close(); err != nil {
		t.Errorf("second MW.Close = %v", err)
	}
	wantStatus(t, "READ through a closed window", f.remote(t, &verbs.SendWR{Opcode: verbs.WRRDMARead,
		SGList: []verbs.SGE{f.src.SGE(0, 8)}, RemoteAddr: f.mr.Addr(), RKey: rkey}), verbs.WCRemAccessErr)
	if err := f.mr.Close(); err != nil {
		t.Errorf("MR.Close after its window closed: %v", err)
	}
	if a := f.p.B.Dev.Query(); a.MaxMW < 1 {
		t.Errorf("MaxMW %d", a.MaxMW)
	}
	f.p.B.Dev.Close()
	if _, err := f.p.B.PD.AllocMW(verbs.MWType2); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("AllocMW on a closed device = %v, want ErrClosed", err)
	}
}

// Invalidating a window in use: a LOCAL_INV executes while a long WRITE is
// landing in the window. Once the LOCAL_INV has completed nothing lands
// any more, and what had landed is a prefix of the WRITE, in whole
// packets; the WRITE fails unless it had landed in full. On the in-memory
// fabric the WRITE's 9th packet is held until the LOCAL_INV has
// completed, so the WRITE fails after at most 8 packets; over UDP the
// two race.
func TestMWInvalidateInUse(t *testing.T) {
	for _, link := range links {
		t.Run(link.String(), func(t *testing.T) {
			f := newMWFixture(t, link, verbs.MWType2)
			const n = mwRegion // 16 packets
			rkey := f.bind(t, 0, n, verbs.AccessRemoteWrite)
			var snapshot []byte
			invalidate := func() error {
				err := f.p.B.QP.PostSend(&verbs.SendWR{WRID: 0x1f, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, InvalidateRKey: rkey})
				if err == nil {
					var wcs []verbs.WC
					wcs, err = verbstest.Poll(f.p.B.SendCQ, 1, 10*time.Second)
					if err == nil && wcs[0].Status != verbs.WCSuccess {
						err = fmt.Errorf("LOCAL_INV: %+v", wcs[0])
					}
				}
				snapshot = bytes.Clone(f.mr.Bytes())
				return err
			}
			errs := make(chan error, 1)
			wr := &verbs.SendWR{WRID: 0xa1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{f.src.SGE(0, n)}, RemoteAddr: f.mr.Addr(), RKey: rkey}
			if link == verbstest.Mem {
				seen, base := 0, f.p.B.Dev.Counters().Get(verbs.RcvdPkts)
				f.p.Net.SetFilter(func(d *memconn.Datagram) memconn.Verdict {
					if d.Dst == f.p.B.Dev.Addr() && len(d.Data) >= 4096 {
						if seen++; seen == 9 {
							// Until B's device has taken in the 8 before (a
							// bounded wait: the checks hold either way).
							for i := 0; i < 5000 && f.p.B.Dev.Counters().Get(verbs.RcvdPkts) < base+8; i++ {
								time.Sleep(100 * time.Microsecond)
							}
							errs <- invalidate()
						}
					}
					return memconn.Deliver
				})
				post(t, f.p.A.QP, wr)
			} else {
				post(t, f.p.A.QP, wr)
				errs <- invalidate()
			}
			wc := verbstest.MustPoll(t, f.p.A.SendCQ, 1)[0]
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.mr.Bytes(), snapshot) {
				t.Fatal("bytes landed after the LOCAL_INV completed")
			}
			landed := 0
			for landed < n && snapshot[landed] == f.src.Bytes()[landed] {
				landed++
			}
			if landed < n {
				landed &^= 4095 // whole packets; a byte may equal the pattern by chance
			}
			if !bytes.Equal(snapshot[landed:], f.pattern[landed:]) {
				t.Fatalf("the WRITE landed %d bytes, then more: not a prefix", landed)
			}
			switch {
			case landed == n && wc.Status != verbs.WCSuccess, landed < n && wc.Status != verbs.WCRemAccessErr:
				t.Fatalf("WRITE %v with %d of %d bytes landed", wc.Status, landed, n)
			case link == verbstest.Mem && landed > 8*4096:
				t.Fatalf("%d bytes landed, more than the 8 packets let through before the LOCAL_INV", landed)
			}
			t.Logf("%d of 16 packets landed before the invalidation", landed/4096)
		})
	}
}

// TestMWCycleAllocations holds a window's per-I/O cycle to zero
// allocations once warmed up: B binds it (BIND_MW), A WRITEs through it
// and invalidates it with a SEND WITH INVALIDATE, and both sides poll.
func TestMWCycleAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items and allocates; .ci/run runs this test without -race")
	}
	f := newMWFixture(t, verbstest.Mem, verbs.MWType2)
	dst := f.p.B.Buffer(t, 64, 0)
	wcs := make([]verbs.WC, 1)
	bind := f.bindWR(0, 4096, verbs.AccessRemoteWrite)
	write := &verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGList: []verbs.SGE{f.src.SGE(0, 4096)},
		RemoteAddr: f.mr.Addr()}
	inv := &verbs.SendWR{Opcode: verbs.WRSendWithInv, Flags: verbs.SendSignaled, SGList: []verbs.SGE{f.src.SGE(0, 16)}}
	recv := &verbs.RecvWR{SGList: []verbs.SGE{dst.SGE(0, 64)}}
	round := func() {
		bind.BindMW.RKey = verbs.IncRKey(f.mw.RKey())
		if err := f.p.B.QP.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		if err := f.p.B.QP.PostSend(bind); err != nil {
			t.Fatal(err)
		}
		pollOne(t, f.p.B.SendCQ, wcs)
		write.RKey, inv.InvalidateRKey = bind.BindMW.RKey, bind.BindMW.RKey
		for _, wr := range []*verbs.SendWR{write, inv} {
			if err := f.p.A.QP.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			pollOne(t, f.p.A.SendCQ, wcs)
		}
		pollOne(t, f.p.B.RecvCQ, wcs)
	}
	for range 200 {
		round()
	}
	if n := testing.AllocsPerRun(500, round); n != 0 {
		t.Errorf("%v allocations per bind, WRITE and SEND WITH INVALIDATE, want 0", n)
	}
}

// A READ through a window and a SEND WITH INVALIDATE of it, posted back to
// back, reach the responder in one batch: the READ's response leaves from
// the window's memory (the link gathers it), and the invalidation that
// follows in the same turn must not wait for that access of its own QP.
// And the same for a LOCAL_INV on the responder's side.
func TestMWInvalidateAfterGatheredRead(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			f := newMWFixture(t, verbstest.Mem, verbs.MWType2)
			rkey := f.bind(t, 0, 8192, verbs.AccessRemoteRead)
			local8k := f.p.A.Buffer(t, 8192, 0)
			postRecv(t, f.p.B.QP, &verbs.RecvWR{WRID: 0x77, SGList: []verbs.SGE{f.p.B.Buffer(t, 64, 0).SGE(0, 64)}})
			read := &verbs.SendWR{WRID: 1, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
				SGList: []verbs.SGE{local8k.SGE(0, 8192)}, RemoteAddr: f.mr.Addr(), RKey: rkey}
			if local {
				post(t, f.p.A.QP, read)
				// B invalidates while the READ's responses may still be in
				// its transmit batch.
				post(t, f.p.B.QP, &verbs.SendWR{WRID: 2, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, InvalidateRKey: rkey})
				wantStatus(t, "LOCAL_INV", verbstest.MustPoll(t, f.p.B.SendCQ, 1)[0], verbs.WCSuccess)
				wc := verbstest.MustPoll(t, f.p.A.SendCQ, 1)[0]
				if wc.Status != verbs.WCSuccess && wc.Status != verbs.WCRemAccessErr {
					t.Fatalf("READ: %+v", wc)
				}
				return
			}
			read.Next = &verbs.SendWR{WRID: 2, Opcode: verbs.WRSendWithInv, Flags: verbs.SendSignaled, InvalidateRKey: rkey}
			post(t, f.p.A.QP, read)
			wcs := verbstest.MustPoll(t, f.p.A.SendCQ, 2)
			wantStatus(t, "READ", wcs[0], verbs.WCSuccess)
			wantStatus(t, "SEND_WITH_INV", wcs[1], verbs.WCSuccess)
			if !bytes.Equal(local8k.Bytes(), f.mr.Bytes()[:8192]) {
				t.Error("the READ returned other bytes than the window's")
			}
			if wc := verbstest.MustPoll(t, f.p.B.RecvCQ, 1)[0]; wc.InvalidatedRKey() != rkey {
				t.Errorf("receive %+v", wc)
			}
		})
	}
}
