// Package toolflag reads command lines the way the C tools goverbs
// imitates read theirs with getopt_long: each option has a short and a
// long name, options and the host operand come in any order, and the
// usage lists "-x, --long=<arg>" lines under the tools' common header.
package toolflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Option is one command-line option.
type Option struct {
	Short, Long string // either may be empty
	Arg         string // the argument's name in the usage; empty for a switch
	Usage       string
	P           any // *int, *bool, *string or flag.Value; nil for a refused option
	// Refused, if set, is why the tool does not take the option, which
	// the C tool has: giving it fails with this reason, and the usage
	// lists it apart (Refuse).
	Refused string
	// Hidden options are taken but not listed: options of the C tool's
	// other tests that do nothing in this one (Hide).
	Hidden bool
}

// Opt returns an Option; tables of options read best one call a line.
func Opt(short, long, arg, usage string, p any) Option {
	return Option{Short: short, Long: long, Arg: arg, Usage: usage, P: p}
}

// Refuse returns an option of the C tool that the tool refuses, for
// reason (a switch if arg is empty).
func Refuse(short, long, arg, reason string) Option {
	return Option{Short: short, Long: long, Arg: arg, Refused: reason}
}

// Hide returns o, taken but left out of the usage.
func Hide(o Option) Option {
	o.Hidden = true
	return o
}

// refused is the flag.Value of a refused option: setting it records the
// reason for Parse to report.
type refused struct {
	s      *Set
	o      *Option
	isBool bool
}

func (r refused) String() string   { return "" }
func (r refused) IsBoolFlag() bool { return r.isBool }
func (r refused) Set(string) error {
	r.s.refusal = r.o
	return errors.New(r.o.Refused)
}

// Set is a tool's options.
type Set struct {
	// Header is the usage's first lines, before the options; New sets the
	// client/server tools' (doc/tools.md), a tool that is neither says
	// what it does.
	Header string
	prog   string
	stderr io.Writer
	opts   []Option
	fs     *flag.FlagSet
	// refusal is the refused option a Parse met.
	refusal *Option
}

// New returns the options of prog; errors and usage go to stderr.
func New(prog string, stderr io.Writer, opts []Option) *Set {
	s := &Set{prog: prog, stderr: stderr, opts: opts, fs: flag.NewFlagSet(prog, flag.ContinueOnError),
		Header: fmt.Sprintf("Usage:\n  %s            start a server and wait for connection\n  %s <host>     connect to server at <host>\n"+
			"  (both on one host: connect to 127.0.0.2, as each side needs a RoCE address of its own)\n", prog, prog)}
	// Parse reports errors itself, in one line, and the usage only for -h.
	s.fs.SetOutput(io.Discard)
	s.fs.Usage = func() {}
	for i, o := range opts {
		for _, name := range []string{o.Short, o.Long} {
			if name == "" {
				continue
			}
			if o.Refused != "" {
				s.fs.Var(refused{s, &s.opts[i], o.Arg == ""}, name, o.Refused)
				continue
			}
			switch p := o.P.(type) {
			case *int:
				s.fs.IntVar(p, name, *p, o.Usage)
			case *bool:
				s.fs.BoolVar(p, name, *p, o.Usage)
			case *string:
				s.fs.StringVar(p, name, *p, o.Usage)
			case flag.Value:
				s.fs.Var(p, name, o.Usage)
			default:
				panic(fmt.Sprintf("toolflag: option %s/%s: unsupported type %T", o.Short, o.Long, o.P))
			}
		}
	}
	return s
}

// Parse parses args and returns the operands, which may come before,
// between or after the options, and the names of the options given. With
// -h it prints the usage and returns flag.ErrHelp; on a bad option it
// prints one line saying what is wrong, and how to see the options, and
// returns the error marked as shown.
func (s *Set) Parse(args []string) (operands []string, given map[string]bool, err error) {
	for {
		if err := s.fs.Parse(args); err != nil {
			switch {
			case errors.Is(err, flag.ErrHelp):
				s.Usage()
			case s.refusal != nil:
				fmt.Fprintf(s.stderr, "%s: %s %s\n", s.prog, names(s.refusal), s.refusal.Refused)
			default:
				fmt.Fprintf(s.stderr, "%s: %s (%s -h lists the options)\n", s.prog, describe(err, args), s.prog)
			}
			return nil, nil, Shown(err)
		}
		if s.fs.NArg() == 0 {
			break
		}
		operands = append(operands, s.fs.Arg(0))
		args = s.fs.Args()[1:]
	}
	given = map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return operands, given, nil
}

// describe is the message of a parse error of args: the flag package's,
// but an unknown option named as it was given (the package writes
// "--name" as "-name").
func describe(err error, args []string) string {
	const unknown = "flag provided but not defined: -"
	name, ok := strings.CutPrefix(err.Error(), unknown)
	if !ok {
		return err.Error()
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if opt, _, _ := strings.Cut(a, "="); opt == "-"+name || opt == "--"+name {
			return "unknown option " + opt
		}
	}
	return "unknown option -" + name
}

// Usage prints the tools' usage: how to start a server or a client, then
// one line per option, and the refused ones.
func (s *Set) Usage() {
	fmt.Fprintf(s.stderr, "%s\nOptions:\n", s.Header)
	var refused []string
	for _, o := range s.opts {
		switch {
		case o.Refused != "":
			refused = append(refused, names(&o))
		case !o.Hidden:
			fmt.Fprintf(s.stderr, "%-32s %s\n", "  "+usageNames(&o), o.Usage)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintf(s.stderr, "\nNot supported by goverbs: %s\n", strings.Join(refused, ", "))
	}
}

// usageNames is how the usage lists o: "-x, --long=<arg>", aligned on
// the long names.
func usageNames(o *Option) string {
	var n string
	switch {
	case o.Short == "":
		n = "    --" + o.Long
	case o.Long == "":
		n = "-" + o.Short
	default:
		n = "-" + o.Short + ", --" + o.Long
	}
	if o.Arg != "" {
		n += "=<" + o.Arg + ">"
	}
	return n
}

// names is o's names as an error or a list gives them: "-x/--long".
func names(o *Option) string {
	switch {
	case o.Short == "":
		return "--" + o.Long
	case o.Long == "":
		return "-" + o.Short
	}
	return "-" + o.Short + "/--" + o.Long
}

// ShownError is a parse error that the flag package has printed already,
// with the usage, so that the command need not print it again.
type ShownError struct{ Err error }

func (e *ShownError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ShownError) Unwrap() error { return e.Err }

// Shown marks an error of flag.FlagSet.Parse as printed, but for
// flag.ErrHelp (the usage asked for, not an error) and nil.
func Shown(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &ShownError{err}
}
