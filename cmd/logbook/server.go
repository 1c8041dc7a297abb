package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/ledger/jetstream"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/server"
)

func init() {
	register("server", "run the ledger service: MCP over Streamable HTTP for many agents, with bearer tokens", serveHTTP)
}

func serveHTTP(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "server", "Serve the MCP tools over Streamable HTTP at /mcp to every agent holding a token\n"+
		"(logbook token add). The process holds the ledger file for its lifetime; tokens are\n"+
		"managed through its admin socket meanwhile. SIGTERM drains: calls in flight are answered.")
	db := dbFlag(e, fs)
	listen := fs.String("listen", server.DefaultListen, "TCP address to serve on (loopback unless told otherwise)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	tlsKey := fs.String("tls-key", "", "the certificate's private key (PEM)")
	admin := fs.String("admin-socket", "", "Unix socket for logbook token while the server runs (default: <db>.admin.sock; \"none\" disables)")
	project := fs.String("project", "", "default project of task_next_actions")
	skills := fs.String("skills", ".agents/skills", "skills folder: */SKILL.md files")
	readOnly := fs.Bool("read-only", false, "refuse mutating tools to every token with ERR_READ_ONLY (calls are still audited)")
	maxBody := fs.Int64("max-body-bytes", mcp.DefaultMaxMessageBytes, "largest request body accepted (413 beyond)")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long to wait for calls in flight")
	store := fs.String("store", "", "keep the ledger in NATS JetStream: nats://HOST:PORT[,…] (with --stream); --db is then this node's local copy")
	noSync := fs.Bool("replica-nosync", false, "with --store: do not fsync the local copy (the stream is the durable log)")
	nf := addNATSFlags(e, fs)
	if done, err := parse(e, fs, args); done {
		return err
	}
	if *store != "" && !isNATS(*store) {
		return usageErr("server: --store %q: want nats://HOST:PORT[,…]", *store)
	}
	if *store == "" && (*nf.stream != "" || *noSync) {
		return usageErr("server: --stream and --replica-nosync go with --store nats://…")
	}
	if *project != "" && !projectRE.MatchString(*project) {
		return usageErr("server: --project %q is not a slug like my-project", *project)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageErr("server: --tls-cert and --tls-key go together")
	}
	if *maxBody <= 0 || *drain <= 0 {
		return usageErr("server: --max-body-bytes and --drain-timeout must be positive")
	}
	if err := checkPath("--db", *db, false); err != nil {
		return err
	}
	if *db == defaultDB {
		if err := os.MkdirAll(filepath.Dir(defaultDB), 0o700); err != nil {
			return usageErr("server: %v", err)
		}
	}
	switch *admin {
	case "":
		*admin = server.AdminSocketPath(*db)
	case "none":
		*admin = ""
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usageErr("server: %v", err)
	}
	defer ln.Close()
	log := newLogger(e)
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() && *tlsCert == "" {
		log.Warn("serving beyond loopback without TLS: bearer tokens cross the network in clear; use --tls-cert or a TLS proxy", "listen", ln.Addr().String())
	}
	if e.getenv("GOGC") == "" {
		debug.SetGCPercent(400) // as serve: a tiny live heap, many small allocations
	}
	opts := boltstore.Options{Create: true, Hold: true}
	var rep *jetstream.Replica
	if *store != "" {
		var closeRep func()
		if rep, closeRep, err = nf.openReplica(ctx, "server", *store, e.stderr); err != nil {
			return err
		}
		defer closeRep()
		// One commit is one atomic batch: its events (a few per call) stay
		// well below the servers' limit.
		opts.Replica, opts.NoSync, opts.MaxBatch = rep, *noSync, jetstream.MaxBatch/8
	}
	l, err := boltstore.Open(*db, opts)
	if err != nil {
		return usageErr("server: %v", err)
	}
	defer l.Close()
	stopFollowing := func() {}
	if rep != nil {
		// Tokens and projections follow what the other nodes append, also
		// while this node takes no calls.
		fctx, stop := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			err := rep.Follow(fctx, l, time.Second, func(tx *boltstore.Tx) error {
				_, err := projections.CatchUp(tx, 0)
				return err
			})
			if fctx.Err() == nil {
				log.Error("following the stream stopped", "stream", *nf.stream, "err", err)
			}
		}()
		stopFollowing = func() { stop(); <-followed }
		defer stopFollowing()
		log.Info("ledger kept in NATS JetStream", "stream", *nf.stream, "servers", *store, "local_copy", *db, "nosync", *noSync)
	}
	tools, err := newTools(l, *skills, commands.Options{Project: *project, ReadOnly: *readOnly, Logger: log})
	if err != nil {
		return usageErr("server: %v", err)
	}
	err = server.Run(ctx, server.Options{
		Store: l, MCP: tools, Listener: ln, TLSCert: *tlsCert, TLSKey: *tlsKey, AdminSocket: *admin,
		MaxBodyBytes: *maxBody, DrainTimeout: *drain, Logger: log,
		Ready: func(addr net.Addr) {
			scheme := "http"
			if *tlsCert != "" {
				scheme = "https"
			}
			log.Info("serving", "db", *db, "url", fmt.Sprintf("%s://%s/mcp", scheme, addr), "admin_socket", *admin, "read_only", *readOnly)
			fmt.Fprintf(e.stdout, "listening %s://%s/mcp\n", scheme, addr)
		},
	})
	if err != nil {
		return usageErr("server: %v", err)
	}
	stopFollowing()
	return l.Close()
}
