package main

import (
	"flag"
	"fmt"
	"strconv"
)

// Number flags are read in decimal only. The flag package reads integers
// in any base Go source may write (base 0): --size 010 was size 8, --seq
// 0x14 seq 20 — a zero-padded seq silently another, and an auditor given
// another root with exit 0.

// decimal is a whole-number flag written in decimal (leading zeros and a
// sign allowed where the type has one, nothing else).
type decimal[T int | int64 | uint64] struct{ p *T }

func (d decimal[T]) String() string {
	if d.p == nil {
		return "0"
	}
	return fmt.Sprint(*d.p)
}

func (d decimal[T]) Set(s string) error {
	var v T
	var err error
	switch p := any(&v).(type) {
	case *uint64:
		*p, err = strconv.ParseUint(s, 10, 64)
	case *int64:
		*p, err = strconv.ParseInt(s, 10, 64)
	case *int:
		var n int64
		n, err = strconv.ParseInt(s, 10, strconv.IntSize)
		*p = int(n)
	}
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return fmt.Errorf("%s is out of range", s)
		}
		return fmt.Errorf("%q is not a whole number in decimal", s)
	}
	*d.p = v
	return nil
}

// decimalVar defines the decimal number flag name on fs, stored in p.
func decimalVar[T int | int64 | uint64](fs *flag.FlagSet, p *T, name string, value T, usage string) {
	*p = value
	fs.Var(decimal[T]{p}, name, usage)
}

// decimalFlag defines the decimal number flag name on fs.
func decimalFlag[T int | int64 | uint64](fs *flag.FlagSet, name string, value T, usage string) *T {
	p := new(T)
	decimalVar(fs, p, name, value, usage)
	return p
}

// printDefaults is fs.PrintDefaults, each decimal flag shown as the flag
// package shows its own number flags ("-size uint", not "-size value").
func printDefaults(fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if d, ok := f.Value.(shownFlag); ok {
			d.showIn(shown, f)
			return
		}
		shown.Var(f.Value, f.Name, f.Usage)
	})
	shown.PrintDefaults()
}

// shownFlag is a flag that printDefaults shows as another.
type shownFlag interface {
	showIn(*flag.FlagSet, *flag.Flag)
}

// showIn defines f in fs as the flag package's own number flag.
func (d decimal[T]) showIn(fs *flag.FlagSet, f *flag.Flag) {
	switch p := any(d.p).(type) {
	case *uint64:
		fs.Uint64(f.Name, *p, f.Usage)
	case *int64:
		fs.Int64(f.Name, *p, f.Usage)
	case *int:
		fs.Int(f.Name, *p, f.Usage)
	}
}
