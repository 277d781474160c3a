package verbs_test

import (
	"fmt"
	"log"
	"net/netip"

	"github.com/goverbs/goverbs/verbs"
)

// newUDEnd is one side of the UD example: a device on loopback with a UD
// QP ready to send and receive with Q_Key qkey.
func newUDEnd(qkey uint32) *exampleEnd {
	dev, err := verbs.OpenDevice(verbs.DeviceConfig{Addr: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		log.Fatal(err)
	}
	pd, err := dev.AllocPD()
	check(err)
	cq, err := dev.CreateCQ(16)
	check(err)
	qp, err := pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeUD, SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8}})
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.ReadyUD(qkey, 0); err != nil {
		log.Fatal(err)
	}
	return &exampleEnd{dev, pd, cq, qp}
}

// A UD datagram between two devices on loopback: the sender names the
// receiver's address handle, QP and Q_Key in the work request; the
// receive buffer gets the packet's 40-byte network header, then the
// message.
func Example_datagram() {
	const qkey = 0x11111111
	server, client := newUDEnd(qkey), newUDEnd(qkey)
	defer server.dev.Close()
	defer client.dev.Close()

	inbox, err := server.pd.RegMR(make([]byte, 40+64), verbs.AccessLocalWrite)
	check(err)
	if err := server.qp.PostRecv(&verbs.RecvWR{WRID: 1, SGList: []verbs.SGE{inbox.SGE(0, inbox.Len())}}); err != nil {
		log.Fatal(err)
	}
	path := server.qp.Endpoint(0).AHAttr() // what travels out of band: GID, port
	ah, err := client.pd.CreateAH(&path)
	if err != nil {
		log.Fatal(err)
	}
	msg, err := client.pd.RegMR([]byte("hello, datagram"), 0)
	check(err)
	err = client.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{msg.SGE(0, msg.Len())},
		AH: ah, RemoteQPN: server.qp.QPN(), RemoteQKey: qkey})
	if err != nil {
		log.Fatal(err)
	}
	wc := wait(server.cq)
	grh := inbox.Bytes()[:40]
	fmt.Println(wc.Status, wc.ByteLen, wc.Flags, wc.SrcQP == client.qp.QPN())
	fmt.Printf("from %v: %s\n", netip.AddrFrom4([4]byte(grh[32:36])), inbox.Bytes()[40:wc.ByteLen])
	// Output:
	// success 55 GRH true
	// from 127.0.0.1: hello, datagram
}
