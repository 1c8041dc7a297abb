package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// subcommand is one `logbook NAME`.
type subcommand struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what every subcommand gets: the standard streams and environment.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

var subcommands = map[string]subcommand{}

func register(name, summary string, run func(ctx context.Context, env *env, args []string) error) {
	subcommands[name] = subcommand{summary: summary, run: run}
}

// Run runs `logbook args...`.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return usageErr("no command given")
		}
		return nil
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, "logbook", version)
		return nil
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		usage(stderr)
		return usageErr("unknown command %q", args[0])
	}
	return sc.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "logbook — a tamper-evident audit ledger for AI coding agents")
	fmt.Fprintln(w, "\nUsage: logbook COMMAND [flags]   (logbook COMMAND --help for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n", "version", "print the version")
}

// newFlags returns a flag set that reports errors as usage errors and
// prints --help to stdout.
func newFlags(e *env, name, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: logbook %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags; --help prints usage to stdout and ends with no error.
func parse(e *env, fs *flag.FlagSet, args []string) (done bool, err error) {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(e.stdout)
			fs.Usage()
			return true, nil
		}
	}
	if err := fs.Parse(args); err != nil {
		return true, usageErr("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return true, usageErr("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return false, nil
}

// isSet reports whether the flag name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// defaultDB is where the ledger lives when neither --db nor LOGBOOK_DB says.
const defaultDB = ".logbook/ledger.db"

// dbFlag adds --db with LOGBOOK_DB and the default.
func dbFlag(e *env, fs *flag.FlagSet) *string {
	def := e.getenv("LOGBOOK_DB")
	if def == "" {
		def = defaultDB
	}
	return fs.String("db", def, "ledger file (env LOGBOOK_DB)")
}

// checkPath validates a user-given file path: not empty, no NUL, not a
// directory. With mustExist the file must be there.
func checkPath(what, path string, mustExist bool) error {
	if path == "" || strings.ContainsRune(path, 0) {
		return usageErr("%s: invalid path %q", what, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return usageErr("%s: %s is a directory", what, path)
	case err == nil && !fi.Mode().IsRegular():
		return usageErr("%s: %s is not a regular file", what, path)
	case err != nil && mustExist:
		return usageErr("%s: %v", what, err)
	case err != nil && !os.IsNotExist(err):
		return usageErr("%s: %v", what, err)
	}
	if !mustExist {
		if dir := filepath.Dir(path); dir != "" {
			if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
				return usageErr("%s: %s is not a directory", what, dir)
			}
		}
	}
	return nil
}

func newLogger(e *env) *slog.Logger {
	level := slog.LevelInfo
	if strings.EqualFold(e.getenv("LOGBOOK_LOG"), "debug") {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}
