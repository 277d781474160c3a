//go:build unix && !linux

package conn

import "syscall"

// msgTrunc is the recvmsg flag for a datagram cut to fit its buffer.
const msgTrunc = syscall.MSG_TRUNC
