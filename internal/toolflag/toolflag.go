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
)

// Option is one command-line option.
type Option struct {
	Short, Long string // either may be empty
	Arg         string // the argument's name in the usage; empty for a switch
	Usage       string
	P           any // *int, *bool, *string or flag.Value
}

// Opt returns an Option; tables of options read best one call a line.
func Opt(short, long, arg, usage string, p any) Option {
	return Option{Short: short, Long: long, Arg: arg, Usage: usage, P: p}
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
}

// New returns the options of prog; errors and usage go to stderr.
func New(prog string, stderr io.Writer, opts []Option) *Set {
	s := &Set{prog: prog, stderr: stderr, opts: opts, fs: flag.NewFlagSet(prog, flag.ContinueOnError),
		Header: fmt.Sprintf("Usage:\n  %s            start a server and wait for connection\n  %s <host>     connect to server at <host>\n", prog, prog)}
	s.fs.SetOutput(stderr)
	s.fs.Usage = s.Usage
	for _, o := range opts {
		for _, name := range []string{o.Short, o.Long} {
			if name == "" {
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
// between or after the options, and the names of the options given.
func (s *Set) Parse(args []string) (operands []string, given map[string]bool, err error) {
	for {
		if err := s.fs.Parse(args); err != nil {
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

// Usage prints the tools' usage: how to start a server or a client, then
// one line per option.
func (s *Set) Usage() {
	fmt.Fprintf(s.stderr, "%s\nOptions:\n", s.Header)
	for _, o := range s.opts {
		var names string
		switch {
		case o.Short == "":
			names = "      --" + o.Long
		case o.Long == "":
			names = "  -" + o.Short
		default:
			names = "  -" + o.Short + ", --" + o.Long
		}
		if o.Arg != "" {
			names += "=<" + o.Arg + ">"
		}
		fmt.Fprintf(s.stderr, "%-32s %s\n", names, o.Usage)
	}
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
