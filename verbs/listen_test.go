package verbs

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestListenErr: a device left on the default address that finds it
// taken says how to choose another; one given its address, or failing
// for another reason, gets the error alone. (Taking the real default
// address here would collide with other packages' tests.)
func TestListenErr(t *testing.T) {
	inUse := &os.SyscallError{Syscall: "bind", Err: syscall.EADDRINUSE}
	const hint = "(the default address is taken"
	for _, c := range []struct {
		err       error
		defaulted bool
		hint      bool
	}{
		{inUse, true, true},
		{inUse, false, false},
		{&os.SyscallError{Syscall: "bind", Err: syscall.EACCES}, true, false},
	} {
		err := listenErr(c.err, c.defaulted)
		if !errors.Is(err, c.err) || !strings.HasPrefix(err.Error(), "verbs: open device: bind: ") {
			t.Errorf("listenErr(%v, %v) = %v", c.err, c.defaulted, err)
		}
		if strings.Contains(err.Error(), hint) != c.hint {
			t.Errorf("listenErr(%v, %v) = %q, hint %v", c.err, c.defaulted, err, c.hint)
		}
	}
}
