package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/server"
	"github.com/logbook-dev/logbook/views"
)

// subcommand is one `logbook NAME`: the line of logbook --help, the text
// of NAME --help, how many arguments may come among its flags, and setup,
// which declares its flags on a call and returns what runs once they are
// parsed. A subcommand with subs (token, prove) is NAME SUB, one of them.
type subcommand struct {
	name, summary string
	use           string // NAME --help's usage after "logbook" (default: name)
	help          string
	args          int
	setup         func(c *call) func() error
	subs          func(ctx context.Context, e *env, args []string) error
}

// env is what every subcommand gets: the standard streams and environment.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// hasSubs reports whether the command named name is made of subcommands
// (token add, prove inclusion).
func hasSubs(name string) bool {
	i := slices.IndexFunc(subcommands, func(sc subcommand) bool { return sc.name == name })
	return i >= 0 && subcommands[i].subs != nil
}

// Run runs `logbook args...`.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) >= 2 && args[0] == "help" && (len(args) == 2 || len(args) == 3 && hasSubs(args[1])) {
		// logbook help X [SUB] is logbook X [SUB] --help.
		args = append(slices.Clone(args[1:]), "--help")
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 2 {
			return fmt.Errorf("help: want at most one command, got %d", len(args)-1)
		}
		usage(stdout)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return nil
	}
	if args[0] == "version" || args[0] == "--version" {
		if len(args) > 1 && isHelp(args[1]) {
			fmt.Fprintln(stdout, "Usage: logbook version\n\nPrint the version: the module's, or "+nextRelease+"-dev+REVISION[.dirty] for a build from a clone.")
			return nil
		}
		if len(args) > 1 {
			return fmt.Errorf("version: unexpected argument %q (see logbook version --help)", args[1])
		}
		fmt.Fprintln(stdout, "logbook", version)
		return nil
	}
	i := slices.IndexFunc(subcommands, func(sc subcommand) bool { return sc.name == args[0] })
	if i < 0 {
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
	defer views.EndBars()
	if sc := subcommands[i]; sc.subs != nil {
		return sc.subs(ctx, e, args[1:])
	}
	return e.exec(ctx, subcommands[i], args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "logbook — a tamper-evident audit ledger for AI coding agents")
	fmt.Fprintln(w, "\nUsage: logbook COMMAND [flags]   (logbook COMMAND --help for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, sc := range subcommands {
		fmt.Fprintf(w, "  %-12s %s\n", sc.name, sc.summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n", "version", "print the version (also --version)")
	fmt.Fprintln(w, "\nlogbook help COMMAND is logbook COMMAND --help.")
	fmt.Fprintln(w, "\nEnvironment:")
	fmt.Fprintln(w, "  LOGBOOK_DB     the ledger file when --db is not given (default "+defaultDB+")")
	fmt.Fprintln(w, "  LOGBOOK_AGENT  serve's agent identity when --agent is not given")
	fmt.Fprintln(w, "  LOGBOOK_LOG    log level of the log lines written to stderr: debug, info (default),")
	fmt.Fprintln(w, "                 warn or error; stdout of serve carries the protocol only")
	fmt.Fprintln(w, "  NO_COLOR       set: no colour in tables, even on a terminal")
	fmt.Fprintln(w, "  LOGBOOK_TOKEN  serve --connect's bearer token (the default of --token-env)")
	fmt.Fprintln(w, "  LOGBOOK_NATS_PASSWORD, LOGBOOK_NATS_SYS_PASSWORD")
	fmt.Fprintln(w, "                 the passwords of --nats-user and --nats-sys-user (server --store, migrate)")
	fmt.Fprintln(w, "\nExit codes: 0 ok, 1 integrity failure, 2 usage or I/O error.")
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// call is one run of a subcommand: its flags, its arguments, and the
// ledger it reads, if any.
type call struct {
	ctx context.Context
	*env
	name        string // in error messages
	fs          *flag.FlagSet
	args        []string
	db          *string
	lockTimeout *time.Duration
	json        *bool
}

// exec declares sc's flags, parses args and runs sc; --help prints its
// usage to stdout and ends with no error.
func (e *env) exec(ctx context.Context, sc subcommand, args []string) error {
	c := &call{ctx: ctx, env: e, name: sc.name, fs: flag.NewFlagSet(sc.name, flag.ContinueOnError)}
	c.fs.Usage = func() {
		fmt.Fprintf(c.fs.Output(), "Usage: logbook %s [flags]\n\n%s\n\nFlags:\n", cmp.Or(sc.use, sc.name), sc.help)
		printDefaults(c.fs)
	}
	run := sc.setup(c)
	if slices.ContainsFunc(args, isHelp) {
		c.fs.SetOutput(e.stdout)
		c.fs.Usage()
		return nil
	}
	// The flag package would print the error and the whole usage to
	// stderr, and then the caller prints the error again: say it once,
	// with where to find the flags. Arguments may come between flags
	// (logbook show T-0001 --json): the flag package stops at the first,
	// so parsing resumes after each.
	c.fs.SetOutput(io.Discard)
	for {
		if err := c.fs.Parse(args); err != nil {
			return fmt.Errorf("%s: %v (see logbook %s --help)", c.fs.Name(), err, c.fs.Name())
		}
		if c.fs.NArg() == 0 {
			if err := c.noneEmpty(); err != nil {
				return err
			}
			return c.named(run())
		}
		if len(c.args) == sc.args {
			return fmt.Errorf("%s: unexpected argument %q", c.fs.Name(), c.fs.Arg(0))
		}
		c.args, args = append(c.args, c.fs.Arg(0)), c.fs.Args()[1:]
	}
}

// noneEmpty refuses a text flag given empty. Such a flag is an unset
// variable (--connect "$URL"), never a choice: taken as left out, it
// opened a local ledger instead of bridging to the server (--connect),
// set LOGBOOK_AGENT aside (--agent), signed as the key's name (--origin),
// recorded the OS user (--issuer), and so on (attack5).
func (c *call) noneEmpty() (err error) {
	c.fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok && err == nil {
			if s, ok := g.Get().(string); ok && s == "" {
				err = fmt.Errorf("%s: --%s \"\" names no value: give one, or leave --%s out (see logbook %s --help)", c.name, f.Name, f.Name, c.name)
			}
		}
	})
	return err
}

// named is err as the command's: its name first, and the options of an
// *audit.OptionError spoken of as flags.
func (c *call) named(err error) error {
	var oe *audit.OptionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe):
		return fmt.Errorf("%s: %s", c.name, oe.Format("--"))
	}
	return fmt.Errorf("%s: %w", c.name, err)
}

// isSet reports whether the flag name was given.
func (c *call) isSet(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// arg is the first argument, or "".
func (c *call) arg() string {
	if len(c.args) == 0 {
		return ""
	}
	return c.args[0]
}

// defaultDB is where the ledger lives when neither --db nor LOGBOOK_DB says.
const defaultDB = ".logbook/ledger.db"

// dbFlag adds --db with LOGBOOK_DB and the default.
// commaList is the items of a comma-separated flag value, each trimmed of
// spaces: "a, b" is a and b, as a person writes a list (--type with
// "task.created, task.updated" matched no task.updated event: " task.updated"
// is no type). "" is one empty item, as a flag given empty must not be
// taken for one left out (token add --tools "").
func commaList(s string) []string {
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

func (c *call) dbFlag() {
	c.db = c.fs.String("db", cmp.Or(c.getenv("LOGBOOK_DB"), defaultDB), "ledger file (env LOGBOOK_DB)")
}

// ledgerFlags adds the flags of a command that opens an existing ledger.
func (c *call) ledgerFlags() {
	c.dbFlag()
	c.lockTimeout = c.fs.Duration("lock-timeout", 5*time.Second, "give up (exit 2) when another process holds the ledger file longer than this")
}

// jsonFlag adds --json.
func (c *call) jsonFlag(usage string) { c.json = c.fs.Bool("json", false, usage) }

// openOptions checks --db and --lock-timeout: the file must exist. A
// command that writes the file (rebuild) appends no events: it may then
// rewrite a node's local copy too (boltstore.Options.NoAppend).
func (c *call) openOptions(readOnly bool) (boltstore.Options, error) {
	if err := checkPath("--db", *c.db, true); err != nil {
		return boltstore.Options{}, err
	}
	if *c.lockTimeout <= 0 {
		return boltstore.Options{}, errors.New("--lock-timeout must be positive")
	}
	return boltstore.Options{ReadOnly: readOnly, NoAppend: !readOnly, LockTimeout: *c.lockTimeout}, nil
}

// with opens the existing ledger, runs fn on it and closes it.
func (c *call) with(readOnly bool, fn func(l *boltstore.Store) error) error {
	opts, err := c.openOptions(readOnly)
	if err != nil {
		return err
	}
	// A reader can work on a snapshot, which the server makes; a writer
	// must wait until the server is stopped.
	todo := "stop it first (SIGTERM)"
	if readOnly {
		todo = onACopy(*c.db)
	}
	l, err := openLedger(*c.db, opts, todo)
	if err != nil {
		return err
	}
	defer l.Close()
	return fn(l)
}

// serverProbe is how long openLedger waits for the file's lock where a
// logbook server answers beside it, before saying so.
const serverProbe = 100 * time.Millisecond

// openLedger opens db with opts; an error is withServerHint's. A logbook
// server holds its file for its lifetime, so where one answers on the
// admin socket beside db the lock is waited for only serverProbe: a file
// found locked then is answered at once with what to do instead, not
// after the whole --lock-timeout that could never end otherwise.
func openLedger(db string, opts boltstore.Options, todo string) (*boltstore.Store, error) {
	if server.AdminAnswers(db) {
		probe := opts
		probe.LockTimeout = min(cmp.Or(opts.LockTimeout, serverProbe), serverProbe)
		l, err := boltstore.Open(db, probe)
		if err == nil {
			// Free after all: opened again below with the whole wait,
			// which the Store's later calls keep.
			l.Close()
		} else if !errors.Is(err, boltstore.ErrLocked) || server.AdminAnswers(db) {
			return nil, withServerHint(err, db, todo)
		}
		// The server stopped meanwhile: its file is waited for as any.
	}
	l, err := boltstore.Open(db, opts)
	return l, withServerHint(err, db, todo)
}

// onACopy is what a reader of a file a server holds is told to do.
func onACopy(db string) string {
	return "run this on a copy, logbook snapshot --db " + db + " --out COPY"
}

// withServerHint is err, a ledger found locked, with todo, what to do
// instead, when a logbook server holds the file (it answers on the admin
// socket beside it, not merely left one there): such a server holds it
// for its lifetime, so waiting longer does not help. A holder that is
// stopped (SIGSTOP, ^Z) is named instead: it keeps the file until resumed.
func withServerHint(err error, db, todo string) error {
	if !errors.Is(err, boltstore.ErrLocked) {
		return err
	}
	if who, stopped := boltstore.HeldBy(db); stopped {
		return fmt.Errorf("%w; it is held by %s", err, who)
	}
	if !server.AdminAnswers(db) {
		return err
	}
	return fmt.Errorf("%w; a logbook server holds it for its lifetime (its admin socket is beside it): %s", err, todo)
}

// view runs fn in one read transaction of the ledger.
// Projections this binary cannot read (none, part of a set, another
// version's) are an error that says how to rebuild them.
func (c *call) view(fn func(tx *boltstore.Tx) error) error {
	err := c.with(true, func(l *boltstore.Store) error { return l.View(fn) })
	if errors.Is(err, projections.ErrVersionChanged) && !errors.Is(err, projections.ErrNewerVersion) {
		return fmt.Errorf("%w; rebuild them from the log: logbook rebuild --db %s", err, *c.db)
	}
	return err
}

// print writes v as one line of JSON with --json, else runs text.
func (c *call) print(v any, text func() error) error {
	if *c.json {
		return writeJSON(c.stdout, v)
	}
	return text()
}

// screen is stdout as a screen for the human views.
func (c *call) screen() *views.Screen { return views.NewScreen(c.stdout, c.getenv("NO_COLOR") != "") }

// progress is a progress bar on stderr.
func (c *call) progress(what string) func(done, total uint64) {
	return views.NewProgress(c.stderr, what).Report
}

// checkPath validates a user-given file path: not empty, no NUL, not a
// directory. With mustExist the file must be there.
func checkPath(what, path string, mustExist bool) error {
	if path == "" || strings.ContainsRune(path, 0) {
		return fmt.Errorf("%s: invalid path %q", what, path)
	}
	if path == "-" && !mustExist {
		// check-proof - reads stdin: a file named "-" made here would
		// be taken for stdout.
		return fmt.Errorf("%s -: \"-\" names stdin or stdout here, not a file to make (a command that prints does so without %s)", what, what)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s: %s is a directory", what, path)
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %s is not a regular file", what, path)
	case err != nil && mustExist:
		return fmt.Errorf("%s: %v", what, err)
	case err != nil && !os.IsNotExist(err):
		return fmt.Errorf("%s: %v", what, err)
	}
	if !mustExist {
		// A file to create: its directory must be there (else the error
		// would name whatever temporary file was to be written first).
		dir := filepath.Dir(path)
		fi, err := os.Stat(dir)
		switch {
		case os.IsNotExist(err):
			return fmt.Errorf("%s: directory %s does not exist", what, dir)
		case err != nil:
			return fmt.Errorf("%s: %v", what, err)
		case !fi.IsDir():
			return fmt.Errorf("%s: %s is not a directory", what, dir)
		}
	}
	return nil
}

func newLogger(e *env) *slog.Logger {
	// An unknown level is info rather than an error: a typo in the
	// environment must not keep an agent's server from starting.
	// It is said once, so that the typo is seen.
	var level slog.Level
	v := e.getenv("LOGBOOK_LOG")
	err := level.UnmarshalText([]byte(v))
	if err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	if err != nil && v != "" {
		log.Warn("LOGBOOK_LOG is not a level (debug, info, warn or error): logging at info", "LOGBOOK_LOG", v)
	}
	return log
}
