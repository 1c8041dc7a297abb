package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/server"
)

// toolFlags adds the flags serve and server share: --db and the tools'
// options (into opts); it returns --skills.
func (c *call) toolFlags(opts *commands.Options, readOnlyUsage string) *string {
	c.dbFlag()
	c.fs.StringVar(&opts.Project, "project", "", "default project of task_next_actions")
	c.fs.BoolVar(&opts.ReadOnly, "read-only", false, readOnlyUsage)
	return c.fs.String("skills", ".agents/skills", "skills folder: */SKILL.md files")
}

// prepare checks --project and --db, creating the default ledger's folder,
// and tunes the collector for a server (mcp.TuneCollector, with the soft
// heap limit limit).
func (c *call) prepare(opts commands.Options, limit int64) error {
	if err := commands.CheckProject(opts.Project); err != nil {
		return fmt.Errorf("--project %v", err)
	}
	if *c.db == defaultDB {
		if err := os.MkdirAll(filepath.Dir(defaultDB), 0o700); err != nil {
			return fmt.Errorf("%v", err)
		}
	}
	if err := checkPath("--db", *c.db, false); err != nil {
		return err
	}
	mcp.TuneCollector(c.getenv, limit)
	return nil
}

func serve(c *call) func() error {
	var opts commands.Options
	skillsDir := c.toolFlags(&opts, "refuse mutating tools with ERR_READ_ONLY (calls are still audited)")
	c.fs.StringVar(&opts.Agent, "agent", c.getenv("LOGBOOK_AGENT"), "agent identity written to every event (env LOGBOOK_AGENT; default: the MCP client's name)")
	lockTimeout := c.fs.Duration("lock-timeout", 5*time.Second, "answer ERR_STORAGE when another process holds the ledger file longer than this")
	connect := c.fs.String("connect", "", "bridge to the logbook server at this URL (http[s]://HOST:PORT/mcp) instead of opening a ledger")
	tokenEnv := c.fs.String("token-env", "LOGBOOK_TOKEN", "with --connect: the environment variable holding the bearer token")
	return func() error {
		agent := opts.Agent
		// (A flag given empty is refused before: noneEmpty.)
		switch {
		case *connect != "":
			return c.bridge(*connect, *tokenEnv)
		case c.isSet("token-env"):
			// As a local ledger's flags are refused with --connect.
			return errors.New("--token-env names the bridge's token; it is for --connect only")
		case *lockTimeout <= 0:
			return errors.New("--lock-timeout must be positive")
		}
		if err := commands.CheckAgent(agent); err != nil {
			// Name where the bad name came from: the flag, or the environment.
			from := "LOGBOOK_AGENT (the default of --agent)"
			if c.isSet("agent") {
				from = "--agent"
			}
			return fmt.Errorf("%s %v", from, err)
		}
		if err := c.prepare(opts, mcp.MemoryLimit); err != nil {
			return err
		}
		if fi, err := os.Stat(*skillsDir); err == nil && !fi.IsDir() {
			return fmt.Errorf("--skills %s is not a directory", *skillsDir)
		}
		opts.Logger = newLogger(c.env)
		// A client that closes its end of stdout must not kill the server by
		// SIGPIPE, silently and mid-commit: the write fails with EPIPE instead,
		// and the session ends with that error on stderr and a normal exit.
		signal.Ignore(syscall.SIGPIPE)
		l, err := openLedger(*c.db, boltstore.Options{Create: true, LockTimeout: *lockTimeout},
			"reach it through it instead, logbook serve --connect http://HOST:PORT/mcp with a token from logbook token add")
		if err != nil {
			return fmt.Errorf("%v", err)
		}
		defer l.Close()
		srv, relay, err := server.Embedded(l, *skillsDir, version, opts)
		if err != nil {
			return fmt.Errorf("%v", err)
		}
		defer relay.Close()
		opts.Logger.Info("serving", "db", *c.db, "agent", cmp.Or(agent, "(client name)"), "read_only", opts.ReadOnly)
		if err := srv.Run(c.ctx, c.stdin, c.stdout); err != nil {
			return fmt.Errorf("%v", err) // exit 2 whatever the cause: serve does not audit
		}
		relay.Close()
		return l.Close()
	}
}

// bridge is `logbook serve --connect URL`: the stdio face of a logbook
// server, for hosts that only launch stdio servers. Flags that configure a
// local ledger make no sense with it and are refused.
func (c *call) bridge(connect, tokenEnv string) error {
	for _, name := range []string{"skills", "read-only", "project", "lock-timeout", "db", "agent"} {
		if c.isSet(name) {
			return fmt.Errorf("--%s configures a local ledger; with --connect the server decides it", name)
		}
	}
	u, err := url.Parse(connect)
	switch {
	case err != nil:
		// (url.Parse's error, and so the URL, may hold a password.)
		return errors.New("--connect is not an http(s) URL like http://127.0.0.1:7460/mcp")
	case u.User != nil:
		// It would show in the process list, and be sent to no one: the
		// bridge authenticates with the bearer token alone.
		return fmt.Errorf("--connect %s://%s: a user or password in the URL is refused (it would show in the process list); the bridge's identity is its bearer token, in $%s", u.Scheme, u.Host, tokenEnv)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("--connect %q is not an http(s) URL like http://127.0.0.1:7460/mcp", u.Redacted())
	}
	token := c.getenv(tokenEnv)
	if token == "" {
		return fmt.Errorf("--connect needs a bearer token in $%s (logbook token add prints one)", tokenEnv)
	}
	log := newLogger(c.env)
	// As serve's: a client that closes its end of stdout ends the bridge
	// with the write's error, not by SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	log.Info("bridging", "url", u.Redacted())
	if err := mcp.Bridge(c.ctx, mcp.BridgeOptions{URL: connect, Token: token, Version: version, Logger: log}, c.stdin, c.stdout); err != nil {
		return fmt.Errorf("%v", err)
	}
	return nil
}

func serveHTTP(c *call) func() error {
	var topts commands.Options
	skillsDir := c.toolFlags(&topts, "refuse mutating tools to every token with ERR_READ_ONLY (calls are still audited)")
	listen := c.fs.String("listen", server.DefaultListen, "TCP address to serve on (loopback unless told otherwise)")
	tlsCert := c.fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	tlsKey := c.fs.String("tls-key", "", "the certificate's private key (PEM)")
	admin := c.fs.String("admin-socket", "", "Unix socket for logbook token while the server runs (default: <db>.admin.sock; \"none\" disables)")
	maxBody := decimalFlag[int64](c.fs, "max-body-bytes", mcp.DefaultMaxMessageBytes, "largest request body accepted (413 beyond)")
	drain := c.fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long to wait for calls in flight")
	maxConns := decimalFlag[int](c.fs, "max-conns", 0, "most connections open at once: one more closes the one that waited longest without a request being served on it, or, when all are serving one, is answered 503 and closed; one token may have half as many requests in flight on /mcp (429 beyond) (default: the file descriptor limit less 128, at least 64; 1024 if the limit cannot be read)")
	store := c.fs.String("store", "", "keep the ledger in NATS JetStream: nats://HOST:PORT[,…] (with --stream); --db is then this node's local copy")
	fsync := c.fs.Bool("replica-fsync", false, "with --store: fsync the local copy at every commit (by default it is not: the stream is the durable log, and a copy left unsynced by a machine restart is refused as damaged)")
	nf := jetstream.AddFlags(c.fs, c.getenv)
	return func() error {
		if *store != "" {
			if err := jetstream.CheckURLs(*store); err != nil {
				return fmt.Errorf("--store: %w", err)
			}
		}
		// The NATS flags mean nothing without --store: refused, not ignored.
		var stray []string
		c.fs.Visit(func(f *flag.Flag) {
			if f.Name == "replica-fsync" || jetstream.IsFlag(f.Name) {
				stray = append(stray, "--"+f.Name)
			}
		})
		switch {
		case *store == "" && len(stray) > 0:
			return fmt.Errorf("%s: only with --store nats://… (the ledger in JetStream)", strings.Join(stray, ", "))
		case (*tlsCert == "") != (*tlsKey == ""):
			return errors.New("--tls-cert and --tls-key go together")
		case *maxBody <= 0 || *drain <= 0 || *maxConns < 0:
			return errors.New("--max-body-bytes and --drain-timeout must be positive, --max-conns not negative")
		}
		if err := c.prepare(topts, mcp.ServerMemoryLimit); err != nil {
			return err
		}
		switch *admin {
		case "":
			*admin = server.AdminSocketPath(*c.db)
		case "none":
			*admin = ""
		}
		log := newLogger(c.env)
		// The local copy skips its fsync unless told otherwise, or unless
		// this system cannot tell a machine restart (no boot id).
		noSync := *store != "" && !*fsync && boltstore.NoSyncSupported()
		led := server.Ledger{DB: *c.db, Skills: *skillsDir, Version: version, Tools: topts, NoSync: noSync}
		if *store != "" {
			// A copy of another stream is refused before the stream
			// is looked up (and made, if it does not exist).
			if nf.Options.Stream != "" {
				if err := boltstore.CheckNodeCopy(*c.db, nf.Options.Stream); err != nil {
					return err
				}
			}
			// A copy that holds events came from the stream: a stream
			// that is gone is not made again for it.
			held, err := copyHolds(*c.db)
			if err != nil {
				return fmt.Errorf("%v", withServerHint(err, *c.db, heldTodo))
			}
			nf.Options.Existing = held > 0
			rep, closeRep, err := c.openReplica(nf, *store)
			if errors.Is(err, jetstream.ErrNoStream) {
				return fmt.Errorf("%w; the local copy %s holds the events of the ledger it kept up to seq %d: the stream was deleted, or --store or --stream names another "+
					"(no stream is made for a copy: to go on from it, logbook migrate it into a new stream)", err, *c.db, held)
			}
			if err != nil {
				return err
			}
			defer closeRep()
			led.Replica = rep
			log.Info("ledger kept in NATS JetStream", "stream", nf.Options.Stream, "servers", *store, "local_copy", *c.db, "local_fsync", !noSync)
		}
		err := server.Serve(c.ctx, led, server.Options{
			Listen: *listen, TLSCert: *tlsCert, TLSKey: *tlsKey, AdminSocket: *admin,
			MaxBodyBytes: *maxBody, DrainTimeout: *drain, MaxConns: *maxConns, Logger: log,
			Ready: func(addr net.Addr) {
				scheme := map[bool]string{false: "http", true: "https"}[*tlsCert != ""]
				log.Info("serving", "db", *c.db, "url", fmt.Sprintf("%s://%s/mcp", scheme, addr), "admin_socket", *admin, "read_only", topts.ReadOnly)
				fmt.Fprintf(c.stdout, "listening %s://%s/mcp\n", scheme, addr)
			},
		})
		if err != nil {
			err = withServerHint(err, *c.db, heldTodo)
			return fmt.Errorf("%v", err) // exit 2 whatever the cause: a server does not audit
		}
		return nil
	}
}

// heldTodo is what a server told its file is held by another should do.
const heldTodo = "stop it first (SIGTERM), or give this one another --db"

// copyHolds is how many events the ledger file at path holds; 0 if there
// is none, or an empty one (its creation cut short, which the server's
// open creates).
func copyHolds(path string) (uint64, error) {
	if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return 0, nil
	}
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	var held uint64
	err = l.View(func(tx *boltstore.Tx) error { held = tx.Head().Seq; return nil })
	return held, err
}
