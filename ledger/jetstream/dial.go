package jetstream

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Dial says how to reach the NATS servers holding a stream: their URLs, a
// user (credentials file, or user and password), TLS, and optionally a
// system-account user with which Open checks that every server syncs always.
type Dial struct {
	URLs                   string // comma-separated nats:// or tls:// URLs
	Name                   string // the connections' name, as the servers list them
	Creds, User, Password  string
	TLSCA, TLSCert, TLSKey string
	SysCreds, SysUser      string
	SysPassword            string
}

// Flags are what the flags of a command that reaches a stream set: the
// stream's Options and how to Dial its servers.
type Flags struct {
	Dial    Dial
	Options Options
}

// AddFlags declares on fs the flags that set the returned Flags: --stream,
// --replicas, --allow-unreplicated and the NATS user, TLS and system-user
// flags. Passwords come from the environment only (getenv's
// LOGBOOK_NATS_PASSWORD and LOGBOOK_NATS_SYS_PASSWORD), never argv.
func AddFlags(fs *flag.FlagSet, getenv func(string) string) *Flags {
	f := &Flags{Dial: Dial{Password: getenv("LOGBOOK_NATS_PASSWORD"), SysPassword: getenv("LOGBOOK_NATS_SYS_PASSWORD")}}
	o, d := &f.Options, &f.Dial
	fs.StringVar(&o.Stream, "stream", "", "JetStream stream holding the ledger (required with NATS servers; subject logbook.<stream>.events)")
	o.Replicas = 3
	fs.Func("replicas", "how many `servers` keep the stream when it is created (default 3)", func(v string) error {
		// Not IntVar: Options reads 0 as the default, 3, so --replicas 0
		// would silently ask for 3.
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("want a whole number")
		}
		if n < 1 {
			return fmt.Errorf("%d: a stream is kept by at least 1 server", n)
		}
		o.Replicas = n
		return nil
	})
	fs.BoolVar(&o.AllowUnreplicated, "allow-unreplicated", false, "accept a stream on fewer than 3 servers (loses events with a disk)")
	fs.StringVar(&d.Creds, "nats-creds", "", "NATS credentials file (JWT + nkey)")
	fs.StringVar(&d.User, "nats-user", "", "NATS user (password from env LOGBOOK_NATS_PASSWORD)")
	fs.StringVar(&d.TLSCA, "nats-tls-ca", "", "CA certificate file to verify the NATS servers with")
	fs.StringVar(&d.TLSCert, "nats-tls-cert", "", "client certificate file for NATS (with --nats-tls-key)")
	fs.StringVar(&d.TLSKey, "nats-tls-key", "", "client key file for NATS")
	fs.StringVar(&d.SysCreds, "nats-sys-creds", "", "system-account credentials file: check every server syncs always")
	fs.StringVar(&d.SysUser, "nats-sys-user", "", "system-account user (password from env LOGBOOK_NATS_SYS_PASSWORD): check every server syncs always")
	return f
}

// flagNames are the names of the flags AddFlags declares.
var flagNames = func() map[string]bool {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	AddFlags(fs, func(string) string { return "" })
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}()

// IsFlag tells whether name is one of the flags AddFlags declares.
func IsFlag(name string) bool { return flagNames[name] }

// CheckURLs checks a store address: comma-separated nats:// or tls://
// URLs, each naming a host, none carrying a user, password or token (they
// come from Dial's user, password and credentials file: in a URL they
// would show in the process list and in the logs). Its errors never repeat
// what a URL holds before its host.
func CheckURLs(addr string) error {
	for i, s := range strings.Split(addr, ",") {
		s = strings.TrimSpace(s)
		what := fmt.Sprintf("NATS server URL %d", i+1)
		u, err := url.Parse(s)
		switch {
		case err != nil || (u.Scheme != "nats" && u.Scheme != "tls"):
			// (url.Parse's error repeats the whole URL.)
			return fmt.Errorf("%s: want nats://HOST:PORT or tls://HOST:PORT", what)
		case u.User != nil:
			return fmt.Errorf("%s (%s://%s): a user, password or token in the URL is refused (it would show in the process list and logs): "+
				"give --nats-user with LOGBOOK_NATS_PASSWORD, or --nats-creds", what, u.Scheme, u.Host)
		case u.Hostname() == "":
			return fmt.Errorf("%s (%s://%s): no host", what, u.Scheme, u.Host)
		case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
			return fmt.Errorf("%s (%s://%s): want nats://HOST:PORT, without a path or query", what, u.Scheme, u.Host)
		}
	}
	return nil
}

// options are nats.go options for a user (creds file or user/password)
// with d's TLS settings.
func (d Dial) options(name, creds, user, password string) []nats.Option {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	if user != "" {
		opts = append(opts, nats.UserInfo(user, password))
	}
	if d.TLSCA != "" {
		opts = append(opts, nats.RootCAs(d.TLSCA))
	}
	if d.TLSCert != "" || d.TLSKey != "" {
		opts = append(opts, nats.ClientCert(d.TLSCert, d.TLSKey))
	}
	return opts
}

// maxFileBytes bounds the credentials, certificate and key files: each is
// some kilobytes. nats.go reads them whole, at every connection.
const maxFileBytes = 1 << 20

// checkFiles refuses a credentials, certificate or key file of more than
// maxFileBytes, or one that is not a regular file: nats.go would read a
// device that never ends (/dev/zero) until the memory ran out, and wait
// for ever to open a named pipe no one writes. A file that cannot be
// looked at is left to nats.go, which says why (and expands a leading ~).
func (d Dial) checkFiles() error {
	for _, f := range []struct{ path, what string }{
		{d.Creds, "a NATS credentials file"}, {d.SysCreds, "a NATS credentials file"},
		{d.TLSCA, "a PEM CA certificate file"}, {d.TLSCert, "a PEM certificate file"}, {d.TLSKey, "a PEM key file"},
	} {
		fi, err := os.Stat(f.path)
		switch {
		case f.path == "" || err != nil:
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file: not %s", f.path, f.what)
		case fi.Size() > maxFileBytes:
			return fmt.Errorf("%s is larger than %d bytes: not %s", f.path, maxFileBytes, f.what)
		}
	}
	return nil
}

// check refuses settings that are half given or contradict each other: a
// client certificate without its key, or a key without one (nats.go said
// "error loading client certificate: open : no such file or directory"),
// both a credentials file and a user for the same login (which one the
// servers took was nats.go's choice), a user without a password (an
// unset LOGBOOK_NATS_PASSWORD was sent as an empty one: "Authorization
// Violation"). Before any server is dialled.
func (d Dial) check() error {
	switch {
	case (d.TLSCert == "") != (d.TLSKey == ""):
		return errors.New("--nats-tls-cert and --nats-tls-key go together: give the client certificate and its key, or neither")
	case d.Creds != "" && d.User != "":
		return errors.New("--nats-creds and --nats-user both say who logs in to NATS: give one")
	case d.SysCreds != "" && d.SysUser != "":
		return errors.New("--nats-sys-creds and --nats-sys-user both say who logs in to NATS as the system user: give one")
	case d.User != "" && d.Password == "":
		return fmt.Errorf("--nats-user %s: LOGBOOK_NATS_PASSWORD is not set: set it to the user's password", d.User)
	case d.SysUser != "" && d.SysPassword == "":
		return fmt.Errorf("--nats-sys-user %s: LOGBOOK_NATS_SYS_PASSWORD is not set: set it to the user's password", d.SysUser)
	}
	return nil
}

// unused says which passwords the environment gives that nothing uses:
// a password is sent only with its user (--nats-user, --nats-sys-user), so
// one set without it is a login the operator meant and the servers never
// see — said in the node's log, since an environment may well hold it for
// other commands.
func (d Dial) unused() []string {
	var notes []string
	if d.Password != "" && d.User == "" {
		notes = append(notes, "LOGBOOK_NATS_PASSWORD is set but not used: it is sent only with --nats-user")
	}
	if d.SysPassword != "" && d.SysUser == "" {
		notes = append(notes, "LOGBOOK_NATS_SYS_PASSWORD is set but not used: it is sent only with --nats-sys-user")
	}
	return notes
}

// connect connects to d's servers with nopts. While none of them accepts
// a connection it asks again, each time waiting twice as long (from 250ms
// up to 2s), for up to opts.OpenWait: servers and logbook nodes started
// together (a cluster's first start, a machine's boot) would otherwise
// leave a node that started first to exit, told that no server is there.
func (d Dial) connect(ctx context.Context, opts Options, nopts []nats.Option) (*nats.Conn, error) {
	giveUp := time.Now().Add(opts.OpenWait)
	// What the servers send of their own (a permissions violation, a slow
	// consumer) goes to the node's log, not to stderr in nats.go's words.
	nopts = append(slices.Clip(nopts), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		opts.Logf("the NATS servers said: %v", err)
	}))
	for pause := 250 * time.Millisecond; ; pause = min(2*pause, 2*time.Second) {
		nc, err := nats.Connect(d.URLs, nopts...)
		if err == nil || !errors.Is(err, nats.ErrNoServers) || time.Now().Add(pause).After(giveUp) {
			return nc, err
		}
		opts.Logf("connect to %s: %v (servers still starting?); asking again", d.URLs, err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

// connectHint says what to do about a connection the servers refused:
// a login they do not know (login names the flags that give it), TLS
// asked of a server without it, or a server that requires it.
func connectHint(err error, login string) string {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return " (the servers refused the login: check " + login + ")"
	case errors.Is(err, nats.ErrSecureConnWanted):
		return " (a tls:// URL, or --nats-tls-*, to a server that offers no TLS: use nats://, or enable tls on the server)"
	case errors.Is(err, nats.ErrSecureConnRequired):
		return " (the server requires TLS: use tls:// URLs, with --nats-tls-ca if its certificate is not publicly trusted)"
	}
	return ""
}

// Connect connects to the servers as d says and opens the stream
// (opts.SystemConn is the system user's connection, if d names one). The
// returned close ends the replica and its connections.
func Connect(ctx context.Context, d Dial, opts Options) (*Replica, func(), error) {
	if err := CheckURLs(d.URLs); err != nil {
		return nil, nil, err
	}
	if err := d.checkFiles(); err != nil {
		return nil, nil, err
	}
	if err := d.check(); err != nil {
		return nil, nil, err
	}
	if err := opts.check(); err != nil {
		return nil, nil, err
	}
	opts = opts.withDefaults()
	for _, note := range d.unused() {
		opts.Logf("%s", note)
	}
	nc, err := d.connect(ctx, opts, d.options(d.Name, d.Creds, d.User, d.Password))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w%s", d.URLs, err, connectHint(err, "--nats-user with LOGBOOK_NATS_PASSWORD, or --nats-creds"))
	}
	if d.SysCreds != "" || d.SysUser != "" {
		if opts.SystemConn, err = d.connect(ctx, opts, d.options(d.Name+" (sync check)", d.SysCreds, d.SysUser, d.SysPassword)); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("connect to %s as the system user: %w%s", d.URLs, err,
				connectHint(err, "--nats-sys-user with LOGBOOK_NATS_SYS_PASSWORD, or --nats-sys-creds"))
		}
	}
	rep, err := Open(ctx, nc, opts)
	closeAll := func() {
		if rep != nil {
			rep.Close()
		}
		if opts.SystemConn != nil {
			opts.SystemConn.Close()
		}
		nc.Close()
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return rep, closeAll, nil
}
