package verbs_test

import (
	"fmt"
	"log"

	"github.com/goverbs/goverbs/verbs"
)

// A server receives on two RC connections through one shared receive
// queue, and learns from an asynchronous event that the SRQ runs low.
func Example_sharedReceiveQueue() {
	server, alice, bob := newEnd(), newEnd(), newEnd()
	defer server.dev.Close()
	defer alice.dev.Close()
	defer bob.dev.Close()

	srq, err := server.pd.CreateSRQ(&verbs.SRQAttr{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		log.Fatal(err)
	}
	inbox, err := server.pd.RegMR(make([]byte, 3*64), verbs.AccessLocalWrite)
	check(err)
	for i := range 3 {
		if err := srq.PostRecv(&verbs.RecvWR{WRID: uint64(i), SGList: []verbs.SGE{inbox.SGE(64*i, 64)}}); err != nil {
			log.Fatal(err)
		}
	}
	// Tell us when fewer than 2 receives are left.
	if err := srq.Modify(&verbs.SRQAttr{SRQLimit: 2}, verbs.SRQLimit); err != nil {
		log.Fatal(err)
	}

	opts := verbs.DefaultConnectOptions()
	names := map[verbs.QPN]string{}
	for _, client := range []*exampleEnd{alice, bob} {
		qp, err := server.pd.CreateQP(&verbs.QPInitAttr{Type: verbs.QPTypeRC, SendCQ: server.cq, RecvCQ: server.cq,
			Cap: verbs.QPCap{MaxSendWR: 1}, SRQ: srq})
		if err != nil {
			log.Fatal(err)
		}
		check(qp.ConnectRC(1, client.qp.Endpoint(2), opts))
		check(client.qp.ConnectRC(2, qp.Endpoint(1), opts))
		names[qp.QPN()] = map[*exampleEnd]string{alice: "alice", bob: "bob"}[client]
	}
	for _, m := range []struct {
		from *exampleEnd
		text string
	}{{alice, "hi from alice"}, {bob, "hi from bob"}} {
		msg, err := m.from.pd.RegMR([]byte(m.text), 0)
		check(err)
		check(m.from.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, SGList: []verbs.SGE{msg.SGE(0, msg.Len())}}))
		wc := wait(server.cq)
		fmt.Printf("WR %d on %s's QP: %s\n", wc.WRID, names[wc.QPNum], inbox.Bytes()[64*wc.WRID:][:wc.ByteLen])
	}
	for ev := range server.dev.AsyncEvents() {
		if ev.Type == verbs.EventSRQLimitReached {
			a, err := ev.SRQ.Query()
			check(err)
			fmt.Printf("%v (limit now %d)\n", ev.Type, a.SRQLimit)
			break
		}
	}
	// Output:
	// WR 0 on alice's QP: hi from alice
	// WR 1 on bob's QP: hi from bob
	// SRQ limit reached (limit now 0)
}
