package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// AdminSocketPath is the admin socket of the server holding the ledger at
// db: beside the file (whatever link names it), so that it shares the
// file's directory permissions.
func AdminSocketPath(db string) string { return boltstore.Beside(db, ".admin.sock") }

// AdminAnswers reports whether a server answers on the admin socket
// beside db: a socket file alone may be left by a server that was killed.
func AdminAnswers(db string) bool {
	conn, err := dialAdmin(AdminSocketPath(db), db)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// adminUID is a user an admin socket's server may run as: this
// process's (the other is the ledger file's owner). A var: tests name
// another.
var adminUID = os.Geteuid

// ledgerOwner is the other user an admin socket's server may run as: the
// ledger file's owner (fileOwner). A var: tests name another.
var ledgerOwner = fileOwner

// errForeignAdmin: the process answering on an admin socket runs as
// another user.
var errForeignAdmin = errors.New("not a logbook server of this user's: nothing was sent to it")

// dialAdmin connects to the admin socket at path of the ledger db, within
// a second, and checks that the process answering runs as this process's
// user or as the owner of db (root managing the tokens of a server run
// as a service's user): a socket put at the path by another user (the
// ledger's folder writable by others, /tmp) would be sent the tokens to
// issue and revoke, and answer what it liked — a revoke it never did said
// done (attack review). The relay's socket is checked so (checkPeer);
// where the system cannot tell (not Linux), the socket's 0600 mode is
// trusted, as before.
func dialAdmin(path, db string) (*net.UnixConn, error) {
	c, err := dialUnix(context.Background(), path, time.Second)
	if err != nil {
		return nil, err
	}
	_, err = checkPeer(c, adminUID())
	if owner, ok := ledgerOwner(db); err != nil && ok {
		if _, ownerErr := checkPeer(c, owner); ownerErr == nil {
			err = nil
		}
	}
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		c.Close()
		return nil, fmt.Errorf("admin socket %s: %w: %w", path, errForeignAdmin, err)
	}
	return c, nil
}

// adminServer answers token management on a Unix socket: whoever can
// connect to it (mode 0600: the ledger's owner) may issue and revoke.
type adminServer struct {
	path string
	ln   net.Listener
	srv  *http.Server
}

// listenAdmin listens on the admin socket (listenUnix). A socket left at
// path by a server that died is replaced; one that a live process answers
// on is refused.
func listenAdmin(path string, l *boltstore.Store, log *slog.Logger) (*adminServer, error) {
	// A socket another process answers on is not left by a dead server:
	// another server's (a shared --admin-socket), whose token commands this
	// one would take over and whose socket it would remove on exit.
	if conn, err := dialUnix(context.Background(), path, time.Second); err == nil {
		conn.Close()
		return nil, fmt.Errorf("admin socket: another process answers on %s (another server's admin socket?); give this one its own --admin-socket", path)
	}
	ln, err := listenUnix(path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	a := &adminServer{path: path, ln: ln, srv: &http.Server{
		Handler:           sameLedger(l, adminHandler(l)),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}}
	go a.srv.Serve(ln)
	return a, nil
}

// listenUnix creates a Unix socket in a fresh 0700 directory beside path,
// restricts it to 0600 and only then moves it to path, so nobody can
// connect in between; whatever socket was at path is replaced (the caller
// holds what proves no live process uses it). Something else at path is
// refused. Closing the listener leaves the file: the caller removes it.
func listenUnix(path string) (*net.UnixListener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".logbook-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	name, done, err := sockName(tmp)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", name)
	done()
	if err != nil {
		return nil, err
	}
	ln := l.(*net.UnixListener)
	ln.SetUnlinkOnClose(false)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket == 0 {
		ln.Close()
		return nil, fmt.Errorf("%s exists and is not a socket", path)
	}
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func (a *adminServer) close() {
	a.srv.Close()
	os.Remove(a.path)
}

func adminHandler(l *boltstore.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokens/issue", func(w http.ResponseWriter, r *http.Request) {
		var req Issue
		if !decodeJSON(w, r, &req) {
			return
		}
		token, t, err := IssueToken(l, req)
		reply(w, err, issued{Token: token, Record: t})
	})
	mux.HandleFunc("POST /tokens/revoke", func(w http.ResponseWriter, r *http.Request) {
		var req Revoke
		if !decodeJSON(w, r, &req) {
			return
		}
		list, err := RevokeTokens(l, req)
		reply(w, err, list)
	})
	mux.HandleFunc("GET /tokens", func(w http.ResponseWriter, r *http.Request) {
		list, err := ListTokens(l)
		reply(w, err, list)
	})
	// A consistent copy of the held file, for the offline commands
	// (verify, replay, proofs) while the server runs.
	mux.HandleFunc("POST /snapshot", func(w http.ResponseWriter, r *http.Request) {
		var req snapshotRequest
		if !decodeJSON(w, r, &req) {
			return
		}
		if !filepath.IsAbs(req.Out) {
			reply(w, fmt.Errorf("%w: the snapshot path must be absolute", ErrInvalid), nil)
			return
		}
		rep, err := l.Snapshot(r.Context(), req.Out, boltstore.SnapshotOptions{})
		reply(w, err, rep)
	})
	return mux
}

// ledgerHeader names, on every admin request, the ledger file the client
// means (an absolute path). A socket is only a name: a server started with
// another ledger's --admin-socket, or a mistyped --admin-socket, answers
// there too, and a token revoked in the wrong ledger stays valid in the
// right one.
const ledgerHeader = "Logbook-Ledger"

// ErrOtherLedger: the server answering on the admin socket holds another
// ledger file than the one named.
var ErrOtherLedger = errors.New("the logbook server on this admin socket holds another ledger")

// sameLedger answers a request only if the ledger file it names is the one
// l holds (the same file, through whatever link names it); else 409.
func sameLedger(l *boltstore.Store, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get(ledgerHeader)
		held, _ := filepath.Abs(l.Path())
		if name == "" {
			http.Error(w, fmt.Sprintf("%v: the request names no ledger (%s header); this server holds %s", ErrInvalid, ledgerHeader, held), http.StatusBadRequest)
			return
		}
		want, err := os.Stat(name)
		have, err2 := os.Stat(l.Path())
		if err != nil || err2 != nil || !os.SameFile(want, have) {
			http.Error(w, fmt.Sprintf("it holds %s, not %s", held, name), http.StatusConflict)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type snapshotRequest struct {
	Out string `json:"out"`
}

// SnapshotThroughServer asks the server answering on socket for a snapshot
// of the ledger db it holds at out (an absolute path, which must not exist;
// the server's user writes it). ok is false when no server answers there;
// ErrOtherLedger if the one answering holds another file.
func SnapshotThroughServer(db, socket, out string) (rep boltstore.SnapshotReport, ok bool, err error) {
	conn, err := dialAdmin(socket, db)
	if errors.Is(err, errForeignAdmin) {
		return rep, true, err
	}
	if err != nil {
		return rep, false, nil
	}
	conn.Close()
	m := &Tokens{c: adminClient(socket, db, 0), db: db, socket: socket}
	defer m.Close()
	return rep, true, m.call(http.MethodPost, "/snapshot", snapshotRequest{Out: out}, &rep)
}

// unicodeOnly refuses a request (a struct of strings, string slices and
// booleans) holding a string that is not valid UTF-8. JSON carries only
// Unicode: json.Marshal writes each invalid byte as U+FFFD, and the server
// would act on another name or path than the one given — token revoke
// --agent $'a\xff' revoked the tokens of agent "a\uFFFD", token add
// issued one for that agent, snapshot --out wrote at another path.
func unicodeOnly(v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalid, domain.Clip(v.String()))
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := unicodeOnly(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := unicodeOnly(v.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// dialUnix connects to the Unix socket at path (any length: sockName),
// giving up after timeout if positive.
func dialUnix(ctx context.Context, path string, timeout time.Duration) (*net.UnixConn, error) {
	name, done, err := sockName(path)
	if err != nil {
		return nil, err
	}
	defer done()
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// adminClient speaks HTTP over the admin socket.
func adminClient(socket, db string, timeout time.Duration) *http.Client {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := dialAdmin(socket, db)
		if err != nil {
			return nil, err // not a typed nil
		}
		return c, nil
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: timeout}
}

type issued struct {
	Token  string            `json:"token"`
	Record projections.Token `json:"record"`
}

func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, fmt.Sprintf("%v: %v", ErrInvalid, err), http.StatusBadRequest)
		return false
	}
	return true
}

// reply writes v, or err with a status that lets the client rebuild it.
func reply(w http.ResponseWriter, err error, v any) {
	switch {
	case errors.Is(err, ErrInvalid):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, ErrNoToken):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, boltstore.ErrDiskFull):
		// A snapshot's copy found no room: the client says so as it
		// does without a server, not by the copy's temporary name.
		http.Error(w, err.Error(), http.StatusInsufficientStorage)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

// Tokens manages the tokens of one ledger: through the admin socket of the
// server holding it when one answers there, else in the file itself.
type Tokens struct {
	l *boltstore.Store // direct
	c *http.Client     // through a server
	// db and socket, through a server: the ledger meant, and where.
	db, socket string
}

// OpenTokens connects to the server's admin socket, or opens the ledger at
// db (which must exist) if no server answers there. ErrHeld if the file is
// held by a process that does not answer on the socket.
func OpenTokens(db, socket string) (*Tokens, error) { return openTokens(db, socket, false) }

// OpenTokensToRead is OpenTokens for a listing: without a server, the file
// is opened read-only and nothing is written to it — projections of another
// version are not refolded, and List refuses them
// (projections.ErrVersionChanged).
func OpenTokensToRead(db, socket string) (*Tokens, error) { return openTokens(db, socket, true) }

func openTokens(db, socket string, readOnly bool) (*Tokens, error) {
	if socket != "" {
		conn, err := dialAdmin(socket, db)
		if errors.Is(err, errForeignAdmin) {
			return nil, err
		}
		if err == nil {
			conn.Close()
			return &Tokens{c: adminClient(socket, db, 30*time.Second), db: db, socket: socket}, nil
		}
	}
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: readOnly, LockTimeout: 2 * time.Second})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, fmt.Errorf("%w and no logbook server answers on %s: stop that process, or manage tokens through the server holding the file (its admin socket is <db>.admin.sock)", ErrHeld, socket)
	}
	if err != nil {
		return nil, err
	}
	if readOnly {
		return &Tokens{l: l}, nil
	}
	// A file last served by another projection version folds nothing until
	// refolded, as a server would at start-up.
	if _, err := commands.Rebuild(l, projections.RebuildOptions{}); err != nil {
		l.Close()
		return nil, err
	}
	return &Tokens{l: l}, nil
}

// issuer is who issues or revokes tokens: name if given, else the OS user
// running this process (the one at the terminal, whether the call goes
// through a server or not), else "unknown".
func issuer(name string) string {
	if name != "" {
		return name
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// ViaServer reports whether the calls go through a running server.
func (m *Tokens) ViaServer() bool { return m.c != nil }

// Close releases the file or the connection.
func (m *Tokens) Close() error {
	if m.l != nil {
		return m.l.Close()
	}
	m.c.CloseIdleConnections()
	return nil
}

// Issue is IssueToken, here or at the server; an Issuer not given is the
// OS user (issuer).
func (m *Tokens) Issue(req Issue) (string, projections.Token, error) {
	req.Issuer = issuer(req.Issuer)
	if m.l != nil {
		return IssueToken(m.l, req)
	}
	var out issued
	err := m.call(http.MethodPost, "/tokens/issue", req, &out)
	return out.Token, out.Record, err
}

// Revoke is RevokeTokens, here or at the server; an Issuer not given is
// the OS user (issuer).
func (m *Tokens) Revoke(req Revoke) ([]projections.Token, error) {
	req.Issuer = issuer(req.Issuer)
	if m.l != nil {
		return RevokeTokens(m.l, req)
	}
	var out []projections.Token
	err := m.call(http.MethodPost, "/tokens/revoke", req, &out)
	return out, err
}

// List is ListTokens, here or at the server.
func (m *Tokens) List() ([]projections.Token, error) {
	if m.l != nil {
		return ListTokens(m.l)
	}
	var out []projections.Token
	err := m.call(http.MethodGet, "/tokens", nil, &out)
	return out, err
}

// unanswered is the error of a request to path the server did not
// answer: a change asked for (issue, revoke, a snapshot) may have been made
// if the request reached the server before it stopped, and the caller must
// not take it for undone (a token issued again is a second token); the
// error says where to look.
func (m *Tokens) unanswered(method, path string, err error) error {
	var op *net.OpError
	if method == http.MethodGet || errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("logbook server admin socket: %w", err)
	}
	look := "logbook token list shows the tokens as they are"
	if path == "/snapshot" {
		look = "a file at the snapshot's path is whole: it appears there only once complete and synced"
	}
	return fmt.Errorf("logbook server admin socket: %w: the server did not answer, so whether it made the change is unknown (%s)", err, look)
}

func (m *Tokens) call(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		if err := unicodeOnly(reflect.ValueOf(in)); err != nil {
			return err
		}
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://logbook-admin"+path, body)
	if err != nil {
		return err
	}
	db, err := filepath.Abs(m.db)
	if err != nil {
		return err
	}
	req.Header.Set(ledgerHeader, db)
	resp, err := m.c.Do(req)
	if err != nil {
		return m.unanswered(method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return m.unanswered(method, path, err)
	}
	msg := string(bytes.TrimSpace(b))
	switch resp.StatusCode {
	case http.StatusOK:
		return json.Unmarshal(b, out)
	case http.StatusBadRequest:
		return fmt.Errorf("%w%s", ErrInvalid, strings.TrimPrefix(msg, ErrInvalid.Error()))
	case http.StatusNotFound:
		return ErrNoToken
	case http.StatusInsufficientStorage:
		return fmt.Errorf("logbook server: %w%s", boltstore.ErrDiskFull, strings.TrimPrefix(msg, boltstore.ErrDiskFull.Error()))
	case http.StatusConflict:
		return fmt.Errorf("%w (%s): %s; name its own --admin-socket, or the --db it serves", ErrOtherLedger, m.socket, msg)
	}
	return fmt.Errorf("logbook server: %s", msg)
}
