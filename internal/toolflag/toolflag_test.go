package toolflag

import (
	"bytes"
	"errors"
	"flag"
	"testing"
)

func TestParse(t *testing.T) {
	var n int
	var all bool
	var name string
	var stderr bytes.Buffer
	var other int
	s := New("tool", &stderr, []Option{
		Opt("n", "iters", "iters", "number of exchanges", &n),
		Opt("a", "all", "", "every size", &all),
		Opt("", "addr", "ip", "an address", &name),
		Hide(Opt("o", "other", "num", "another test's", &other)),
		Refuse("R", "rdma_cm", "", "(RDMA-CM) is not supported: use the TCP exchange"),
		Refuse("T", "", "tos", "is not supported"),
	})
	ops, given, err := s.Parse([]string{"-n", "5", "host", "--all", "--addr=10.0.0.1"})
	if err != nil || len(ops) != 1 || ops[0] != "host" || n != 5 || !all || name != "10.0.0.1" {
		t.Fatalf("Parse: %q %v; n %d all %v addr %q", ops, err, n, all, name)
	}
	if !given["n"] || !given["all"] || !given["addr"] || given["iters"] || given["a"] {
		t.Errorf("given %v: want the names as written", given)
	}
	if _, _, err := s.Parse([]string{"-o", "3"}); err != nil || other != 3 {
		t.Errorf("a hidden option: %v, %d", err, other)
	}
	// A bad option is one line, with where to look; a refused one says why.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "tool: unknown option --nope (tool -h lists the options)\n"},
		{[]string{"-a", "-nope=3"}, "tool: unknown option -nope (tool -h lists the options)\n"},
		{[]string{"-n", "x"}, "tool: invalid value \"x\" for flag -n: parse error (tool -h lists the options)\n"},
		{[]string{"host", "-R"}, "tool: -R/--rdma_cm (RDMA-CM) is not supported: use the TCP exchange\n"},
		{[]string{"-T", "5"}, "tool: -T is not supported\n"},
	} {
		stderr.Reset()
		var shown *ShownError
		if _, _, err := s.Parse(c.args); !errors.As(err, &shown) || stderr.String() != c.want {
			t.Errorf("%q: %v, printed %q; want %q", c.args, err, stderr.String(), c.want)
		}
	}
	stderr.Reset()
	if _, _, err := s.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	want := "Usage:\n  tool            start a server and wait for connection\n  tool <host>     connect to server at <host>\n" +
		"  (both on one host: connect to 127.0.0.2, as each side needs a RoCE address of its own)\n\nOptions:\n" +
		"  -n, --iters=<iters>            number of exchanges\n" +
		"  -a, --all                      every size\n" +
		"      --addr=<ip>                an address\n" +
		"\nNot supported by goverbs: -R/--rdma_cm, -T\n"
	if stderr.String() != want {
		t.Errorf("usage\n%s\nwant\n%s", stderr.String(), want)
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true}, {"64K", 64 << 10, true}, {"8M", 8 << 20, true}, {"0x10", 16, true}, {"-5", -5, true},
		{"abc", 0, false}, {"K", 0, false}, {"1G", 0, false}, {"9223372036854775807K", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	var n int
	if err := (Size{&n}).Set("2K"); err != nil || n != 2048 {
		t.Errorf("Size.Set(2K): %v, %d", err, n)
	}
	if err := (Size{&n}).Set("2X"); err == nil || n != 2048 {
		t.Errorf("Size.Set(2X): %v, %d (want an error, the value kept)", err, n)
	}
}
