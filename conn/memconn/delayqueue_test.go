package memconn

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestDelayQueuePushDuringDelivery: a datagram pushed while the queue
// delivers, whose timer fires before that delivery ends, is delivered by
// the running fire; a datagram pushed after that must still be delivered
// (the spent timer once left the queue armed for nothing, and the fabric
// delivered no more datagrams).
func TestDelayQueuePushDuringDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan byte, 3)
		var d *delayQueue
		d = &delayQueue{deliver: func(p *packet) {
			if p.buf[0] == 1 {
				d.push(&packet{buf: []byte{2}}, time.Millisecond)
				time.Sleep(2 * time.Millisecond) // its timer fires meanwhile
			}
			got <- p.buf[0]
		}}
		d.push(&packet{buf: []byte{1}}, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		d.push(&packet{buf: []byte{3}}, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		for want := byte(1); want <= 3; want++ {
			select {
			case b := <-got:
				if b != want {
					t.Fatalf("delivered %d, want %d", b, want)
				}
			default:
				t.Fatalf("datagram %d never delivered", want)
			}
		}
		d.stop(func(*packet) {})
	})
}
