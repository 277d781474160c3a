package verbs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/netip"
	"time"

	"github.com/goverbs/goverbs/verbs"
)

// exampleEnd is one side of the examples: a device with a PD, one CQ and a
// QP (RC from newEnd).
type exampleEnd struct {
	dev *verbs.Device
	pd  *verbs.PD
	cq  *verbs.CQ
	qp  *verbs.QP
}

func newEnd() *exampleEnd {
	dev, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		log.Fatal(err)
	}
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	cq, err := dev.CreateCQ(16)
	if err != nil {
		log.Fatal(err)
	}
	qp, err := pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	return &exampleEnd{dev, pd, cq, qp}
}

// check ends the example on an error, where a program would handle it.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// wait returns the next completion of cq, giving up after 10 seconds.
func wait(cq *verbs.CQ) verbs.WC {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wc := make([]verbs.WC, 1)
	if _, err := cq.Wait(ctx, wc); err != nil {
		log.Fatal(err)
	}
	return wc[0]
}

// Two devices on loopback UDP connect an RC queue pair and exchange a SEND.
// In a real program the Endpoint values travel between hosts out of band
// (ibv_rc_pingpong uses TCP); here both ends live in one process.
func Example_send() {
	server, client := newEnd(), newEnd()
	defer server.dev.Close()
	defer client.dev.Close()

	opts := verbs.DefaultConnectOptions()
	if err := server.qp.ConnectRC(100, client.qp.Endpoint(200), opts); err != nil {
		log.Fatal(err)
	}
	if err := client.qp.ConnectRC(200, server.qp.Endpoint(100), opts); err != nil {
		log.Fatal(err)
	}

	inbox, err := server.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.qp.PostRecv(&verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{inbox.SGE(0, 64)}}); err != nil {
		log.Fatal(err)
	}
	msg, err := client.pd.RegMR([]byte("hello, RDMA"), 0)
	if err != nil {
		log.Fatal(err)
	}
	err = client.qp.PostSend(&verbs.SendWR{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{msg.SGE(0, msg.Len())}})
	if err != nil {
		log.Fatal(err)
	}

	sent, got := wait(client.cq), wait(server.cq)
	fmt.Println("client:", sent.Status, sent.Opcode)
	fmt.Println("server:", got.Status, got.Opcode, got.ByteLen, "bytes:", string(inbox.Bytes()[:got.ByteLen]))
	// Output:
	// client: success IBV_WC_SEND
	// server: success IBV_WC_RECV 11 bytes: hello, RDMA
}

// One-sided operations: the client writes into the server's memory, reads
// it back and adds to a counter there, without the server's CPU taking
// part. The server only registers memory and hands out its address and key.
func Example_oneSided() {
	server, client := newEnd(), newEnd()
	defer server.dev.Close()
	defer client.dev.Close()
	opts := verbs.DefaultConnectOptions()
	if err := server.qp.ConnectRC(1, client.qp.Endpoint(2), opts); err != nil {
		log.Fatal(err)
	}
	if err := client.qp.ConnectRC(2, server.qp.Endpoint(1), opts); err != nil {
		log.Fatal(err)
	}

	remote, err := server.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|
		verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}
	local, err := client.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	copy(local.Bytes(), "one-sided")

	ops := []verbs.SendWR{
		{Opcode: verbs.WRRDMAWrite, SGList: []verbs.SGE{local.SGE(0, 9)}, RemoteAddr: remote.Addr(), RKey: remote.RKey()},
		{Opcode: verbs.WRRDMARead, SGList: []verbs.SGE{local.SGE(16, 9)}, RemoteAddr: remote.Addr(), RKey: remote.RKey()},
		{Opcode: verbs.WRAtomicFetchAndAdd, SGList: []verbs.SGE{local.SGE(32, 8)}, RemoteAddr: remote.Addr() + 56,
			RKey: remote.RKey(), CompareAdd: 5},
	}
	for i := range ops {
		ops[i].Flags = verbs.SendSignaled
		if err := client.qp.PostSend(&ops[i]); err != nil {
			log.Fatal(err)
		}
		fmt.Println(wait(client.cq).Opcode)
	}
	fmt.Printf("server memory: %q, counter %d\n", remote.Bytes()[:9], remote.Bytes()[56])
	fmt.Printf("read back: %q\n", local.Bytes()[16:25])
	// Output:
	// IBV_WC_RDMA_WRITE
	// IBV_WC_RDMA_READ
	// IBV_WC_FETCH_ADD
	// server memory: "one-sided", counter 5
	// read back: "one-sided"
}

// Objects close in libibverbs' order: a QP before the PD and CQs it uses,
// MRs before their PD. Out of order, Close fails with ErrBusy and changes
// nothing; a closed object refuses to work with ErrClosed, and closing it
// again is harmless.
func Example_lifecycle() {
	e := newEnd()
	defer e.dev.Close()
	mr, err := e.pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	err = e.pd.Close()
	fmt.Println(errors.Is(err, verbs.ErrBusy), err)
	for _, c := range []io.Closer{e.qp, e.cq, mr, e.pd} {
		if err := c.Close(); err != nil {
			log.Fatal(err)
		}
	}
	err = e.qp.PostRecv(&verbs.RecvWR{WRID: 1})
	fmt.Println(errors.Is(err, verbs.ErrClosed)) // "verbs: post recv: QP 0x…: work request 0 of the chain: closed"
	fmt.Println(e.pd.Close())
	// Output:
	// true verbs: close PD: resource busy: 1 MR(s), 0 MW(s), 1 QP(s), 0 SRQ(s) and 0 AH(s) still open
	// true
	// <nil>
}

// Closing a device completes the work its QPs hold with WR_FLUSH_ERR, as
// a QP moved to the error state does; once those are polled, its CQs say
// ErrClosed, so a waiter never hangs.
func Example_deviceClose() {
	e := newEnd()
	err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPStateInit, PortNum: 1},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	if err != nil {
		log.Fatal(err)
	}
	if err := e.qp.PostRecv(&verbs.RecvWR{WRID: 1}); err != nil {
		log.Fatal(err)
	}
	e.dev.Close()
	wcs := make([]verbs.WC, 4)
	n, err := e.cq.Wait(context.Background(), wcs)
	fmt.Println(n, wcs[0].WRID, wcs[0].Status, wcs[0].Opcode, err)
	_, err = e.cq.Wait(context.Background(), wcs)
	fmt.Println(err)
	// Output:
	// 1 1 Work Request Flushed Error IBV_WC_RECV <nil>
	// verbs: wait CQ: closed
}
