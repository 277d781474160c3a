//go:build !unix

package conn

// msgTrunc is zero where recvmsg has no truncation flag: such systems
// report an oversized datagram as a receive error instead.
const msgTrunc = 0
