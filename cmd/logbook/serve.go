package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/skills"
)

func init() {
	register("serve", "run the MCP stdio server for one agent", serve)
}

var projectRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// serveMemoryLimit is serve's soft heap limit (GOMEMLIMIT overrides it).
const serveMemoryLimit = 256 << 20

func serve(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "serve", "Serve the MCP tools over stdin/stdout for one agent. Creates the ledger file if it does not exist.")
	db := dbFlag(e, fs)
	agent := fs.String("agent", e.getenv("LOGBOOK_AGENT"), "agent identity written to every event (env LOGBOOK_AGENT; default: the MCP client's name)")
	project := fs.String("project", "", "default project of task_next_actions")
	skillsDir := fs.String("skills", ".agents/skills", "skills folder: */SKILL.md files")
	readOnly := fs.Bool("read-only", false, "refuse mutating tools with ERR_READ_ONLY (calls are still audited)")
	lockTimeout := fs.Duration("lock-timeout", 5*time.Second, "answer ERR_STORAGE when another process holds the ledger file longer than this")
	connect := fs.String("connect", "", "bridge to the logbook server at this URL (http[s]://HOST:PORT/mcp) instead of opening a ledger")
	tokenEnv := fs.String("token-env", "LOGBOOK_TOKEN", "with --connect: the environment variable holding the bearer token")
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *connect != "" {
		return bridge(ctx, e, fs, *connect, *tokenEnv)
	}
	if *lockTimeout <= 0 {
		return usageErr("serve: --lock-timeout must be positive")
	}
	if *project != "" && !projectRE.MatchString(*project) {
		return usageErr("serve: --project %q is not a slug like my-project", *project)
	}
	if n := utf8.RuneCountInString(*agent); n > 128 || !utf8.ValidString(*agent) || strings.IndexFunc(*agent, unicode.IsControl) >= 0 {
		return usageErr("serve: --agent must be at most 128 characters of valid UTF-8 with no control characters")
	}
	if err := checkPath("--db", *db, false); err != nil {
		return err
	}
	if *db == defaultDB {
		if err := os.MkdirAll(filepath.Dir(defaultDB), 0o700); err != nil {
			return usageErr("serve: %v", err)
		}
	}
	if fi, err := os.Stat(*skillsDir); err == nil && !fi.IsDir() {
		return usageErr("serve: --skills %s is not a directory", *skillsDir)
	}
	if e.getenv("GOGC") == "" {
		// The live heap is tiny and every call allocates a little: the
		// default GC target (100%) collects many times a second. 400% keeps
		// the heap near 20 MB and cuts CPU per call by about a fifth.
		debug.SetGCPercent(400)
	}
	if e.getenv("GOMEMLIMIT") == "" {
		// ...but with large requests in flight 400% let the heap reach
		// five times their size; past this soft limit the GC works harder
		// instead (the transport bounds what is in flight, mcp.maxHeldBytes).
		debug.SetMemoryLimit(serveMemoryLimit)
	}
	log := newLogger(e)
	// A client that closes its end of stdout must not kill the server by
	// SIGPIPE, silently and mid-commit: the write fails with EPIPE instead,
	// and the session ends with that error on stderr and a normal exit.
	signal.Ignore(syscall.SIGPIPE)
	l, err := boltstore.Open(*db, boltstore.Options{Create: true, LockTimeout: *lockTimeout})
	if err != nil {
		return usageErr("serve: %v", err)
	}
	defer l.Close()
	srv, err := newTools(l, *skillsDir, commands.Options{Agent: *agent, Project: *project, ReadOnly: *readOnly, Logger: log})
	if err != nil {
		return usageErr("serve: %v", err)
	}
	log.Info("serving", "db", *db, "agent", cmp.Or(*agent, "(client name)"), "read_only", *readOnly)
	if err := srv.Run(ctx, e.stdin, e.stdout); err != nil {
		return err
	}
	return l.Close()
}

// newTools loads the skills folder and returns the MCP tools running on l
// with opts (Skills, Skipped and Version filled in here).
func newTools(l *boltstore.Store, skillsDir string, opts commands.Options) (*mcp.Server, error) {
	set, skipped, err := skills.Load(skillsDir)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	for _, s := range skipped {
		opts.Logger.Warn("skill skipped", "path", s.Path, "reason", s.Reason)
	}
	opts.Skills, opts.Skipped, opts.Version = set, skipped, version
	svc, err := commands.New(l, opts)
	if err != nil {
		return nil, err
	}
	return mcp.New(svc, mcp.Options{Version: version, Logger: opts.Logger}), nil
}
