// Package clienttest is a test helper for the tools' tests, which start a
// server and its client at once: the client retries until the server
// listens. Standard library only.
package clienttest

import (
	"errors"
	"syscall"
	"time"
)

// UntilListening calls run until it fails with something other than a
// refused TCP connection (the server's port not open yet) or succeeds, for
// up to 5 s, and returns run's last error. run resets whatever output an
// earlier try left.
func UntilListening(run func() error) error {
	var err error
	for range 500 {
		if err = run(); !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}
