package wire

import "testing"

func TestPacketString(t *testing.T) {
	_, send := splitIPv4(t, unhex(t, vectorRCSend))
	_, ack := splitIPv4(t, unhex(t, vectorRCACK))
	buf := make([]byte, 256)
	read, _ := newSample(RCReadRequest, 0).build(buf, &testEnvelope)
	read = append(Packet(nil), read...)
	imm, _ := newSample(UDSendOnlyWithImmediate, 3).build(buf, &testEnvelope)
	for _, tc := range []struct {
		p    Packet
		want string
	}{
		{send, "RC_SEND_ONLY dqp=0x000012 psn=0 A pad=3 payload=5"},
		{ack, "RC_ACKNOWLEDGE dqp=0x000011 psn=0 aeth(ACK credits=unlimited msn=1)"},
		{read, "RC_RDMA_READ_REQUEST dqp=0xabcdef psn=16702650 A SE reth(va=0x1122334455667788 rkey=0x99aabbcc len=65536)"},
		{imm, "UD_SEND_ONLY_WITH_IMMEDIATE dqp=0xabcdef psn=16702650 A SE deth(qkey=0x11111111 sqp=0x000017) imm=0xa1b2c3d4 pad=1 payload=3"},
		{Packet{1, 2, 3}, "malformed (wire: packet shorter than BTH and ICRC)"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func TestSyndromeString(t *testing.T) {
	for s, want := range map[Syndrome]string{
		ACKSyndrome(CreditsUnlimited):    "ACK credits=unlimited",
		ACKSyndrome(0x0e):                "ACK credits=128",
		RNRNAKSyndrome(12):               "RNR NAK 640µs",
		NAKSyndrome(NAKPSNSequenceError): "NAK PSN sequence error",
		NAKSyndrome(NAKRemoteAccess):     "NAK remote access error",
		Syndrome(0x41):                   "reserved syndrome 0x41",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#02x: %q, want %q", uint8(s), got, want)
		}
	}
}
