package toolflag

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	var n int
	var all bool
	var name string
	var stderr bytes.Buffer
	s := New("tool", &stderr, []Option{
		Opt("n", "iters", "iters", "number of exchanges", &n),
		Opt("a", "all", "", "every size", &all),
		Opt("", "addr", "ip", "an address", &name),
	})
	ops, given, err := s.Parse([]string{"-n", "5", "host", "--all", "--addr=10.0.0.1"})
	if err != nil || len(ops) != 1 || ops[0] != "host" || n != 5 || !all || name != "10.0.0.1" {
		t.Fatalf("Parse: %q %v; n %d all %v addr %q", ops, err, n, all, name)
	}
	if !given["n"] || !given["all"] || !given["addr"] || given["iters"] || given["a"] {
		t.Errorf("given %v: want the names as written", given)
	}
	if _, _, err := s.Parse([]string{"--nope"}); err == nil || !strings.Contains(stderr.String(), "Options:\n") {
		t.Errorf("unknown option: %v, usage %q", err, stderr.String())
	}
	stderr.Reset()
	s.Usage()
	want := "Usage:\n  tool            start a server and wait for connection\n  tool <host>     connect to server at <host>\n\nOptions:\n" +
		"  -n, --iters=<iters>            number of exchanges\n" +
		"  -a, --all                      every size\n" +
		"      --addr=<ip>                an address\n"
	if stderr.String() != want {
		t.Errorf("usage\n%s\nwant\n%s", stderr.String(), want)
	}
}
