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
	if len(args) == 2 && args[0] == "help" {
		// logbook help X is logbook X --help.
		args = []string{args[1], "--help"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 2 {
			return usageErr("help: want at most one command, got %d", len(args)-1)
		}
		usage(stdout)
		if len(args) == 0 {
			return usageErr("no command given")
		}
		return nil
	}
	if args[0] == "version" || args[0] == "--version" {
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help" || args[1] == "-help") {
			fmt.Fprintln(stdout, "Usage: logbook version\n\nPrint the version: the module's, or "+nextRelease+"-dev+REVISION[.dirty] for a build from a clone.")
			return nil
		}
		fmt.Fprintln(stdout, "logbook", version)
		return nil
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		usage(stderr)
		return usageErr("unknown command %q", args[0])
	}
	defer endBars()
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
	fmt.Fprintf(w, "  %-12s %s\n", "version", "print the version (also --version)")
	fmt.Fprintln(w, "\nlogbook help COMMAND is logbook COMMAND --help.")
	fmt.Fprintln(w, "\nEnvironment:")
	fmt.Fprintln(w, "  LOGBOOK_DB     the ledger file when --db is not given (default "+defaultDB+")")
	fmt.Fprintln(w, "  LOGBOOK_AGENT  serve's agent identity when --agent is not given")
	fmt.Fprintln(w, "  LOGBOOK_LOG    log level of the log lines written to stderr: debug, info (default),")
	fmt.Fprintln(w, "                 warn or error; stdout of serve carries the protocol only")
	fmt.Fprintln(w, "  NO_COLOR       set: no colour in tables, even on a terminal")
	fmt.Fprintln(w, "\nExit codes: 0 ok, 1 integrity failure, 2 usage or I/O error.")
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
	_, done, err = parseArgs(e, fs, args, 0)
	return done, err
}

// parseArgs is parse for a command that takes up to max arguments after its
// flags; it returns them.
func parseArgs(e *env, fs *flag.FlagSet, args []string, max int) (rest []string, done bool, err error) {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(e.stdout)
			fs.Usage()
			return nil, true, nil
		}
	}
	// The flag package would print the error and the whole usage to
	// stderr, and then the caller prints the error again: say it once,
	// with where to find the flags.
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	// Arguments may come between flags (logbook show T-0001 --json): the
	// flag package stops at the first, so parsing resumes after each.
	for {
		if err := fs.Parse(args); err != nil {
			return nil, true, usageErr("%s: %v (see logbook %s --help)", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			return rest, false, nil
		}
		if len(rest) == max {
			return nil, true, usageErr("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
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
	// An unknown level is info rather than an error: a typo in the
	// environment must not keep an agent's server from starting.
	var level slog.Level
	if err := level.UnmarshalText([]byte(e.getenv("LOGBOOK_LOG"))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}
