package main

import (
	"cmp"
	"context"
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
	if done, err := parse(e, fs, args); done {
		return err
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
	set, skipped, err := skills.Load(*skillsDir)
	if err != nil {
		return usageErr("serve: skills: %v", err)
	}
	for _, s := range skipped {
		log.Warn("skill skipped", "path", s.Path, "reason", s.Reason)
	}
	svc, err := commands.New(l, commands.Options{Agent: *agent, Project: *project, ReadOnly: *readOnly,
		Skills: set, Skipped: skipped, Version: version, Logger: log})
	if err != nil {
		return usageErr("serve: %v", err)
	}
	srv := mcp.New(svc, mcp.Options{Version: version, Logger: log})
	log.Info("serving", "db", *db, "agent", cmp.Or(*agent, "(client name)"), "read_only", *readOnly)
	if err := srv.Run(ctx, e.stdin, e.stdout); err != nil {
		return err
	}
	return l.Close()
}
