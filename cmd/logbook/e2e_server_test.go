package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/jetstream"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is a `logbook server` process, listening on a free loopback port.
type httpServer struct {
	t      testing.TB
	cmd    *exec.Cmd
	db     string
	url    string // http://127.0.0.1:PORT/mcp
	stderr *lockedBuffer
	exited chan struct{}
	code   int
}

// startHTTPServer runs `logbook server --db db` with args and waits until it
// listens (it prints the URL once it accepts connections).
func startHTTPServer(t testing.TB, db string, args ...string) *httpServer {
	t.Helper()
	args = append([]string{"server", "--db", db, "--listen", "127.0.0.1:0", "--skills", e2eSkills(t)}, args...)
	cmd := exec.Command(e2eBinary(t), args...)
	cmd.Env = append(os.Environ(), "LOGBOOK_DB=", "GORACE=halt_on_error=1 exitcode=66")
	s := &httpServer{t: t, cmd: cmd, db: db, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		s.code = cmd.ProcessState.ExitCode()
		close(s.exited)
	}()
	t.Cleanup(func() { s.kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		s.kill()
		t.Fatalf("logbook server did not start (%q, %v):\n%s", line, err, s.stderr.String())
	}
	s.url = url
	return s
}

// stop sends SIGTERM and returns the exit code once the server has drained.
func (s *httpServer) stop() int {
	s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.exited
	return s.code
}

// kill ends the server with SIGKILL, mid-whatever.
func (s *httpServer) kill() {
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// addToken runs `logbook token add` and returns the token and its SHA-256.
func addToken(t testing.TB, db string, args ...string) (token, sum string) {
	t.Helper()
	r := run(t, append([]string{"token", "add", "--db", db, "--issuer", "test-operator"}, args...)...)
	if r.code != 0 {
		t.Fatalf("token add %v: %v", args, r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	token = lines[len(lines)-1]
	h := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(h[:])
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return keepAlive.RoundTrip(r)
}

// keepAlive keeps enough idle connections for many calls in flight (the
// default keeps 2 per host, and would open a connection per call beyond).
var keepAlive = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 512
	return t
}()

// connectHTTP is the go-sdk client over Streamable HTTP, calling itself
// name; protocol "" lets the SDK choose (its newest, 2026-07-28).
func connectHTTP(t testing.TB, url, token, name, protocol string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, DisableStandaloneSSE: true}
	var opts *sdk.ClientSessionOptions
	if protocol != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: protocol}
	}
	cs, err := c.Connect(context.Background(), tr, opts)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// envelope is a tool result's JSON.
type envelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// callHTTP calls a tool and decodes the envelope of its result.
func callHTTP(cs *sdk.ClientSession, tool string, args any) (envelope, error) {
	return callHTTPCtx(context.Background(), cs, tool, args)
}

// callHTTPCtx is callHTTP within ctx (a call's deadline).
func callHTTPCtx(ctx context.Context, cs *sdk.ClientSession, tool string, args any) (envelope, error) {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return envelope{}, err
	}
	var env envelope
	if len(res.Content) != 1 {
		return env, fmt.Errorf("%s: %d content items", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return env, fmt.Errorf("%s: content is %T", tool, res.Content[0])
	}
	if err := json.Unmarshal([]byte(text.Text), &env); err != nil {
		return env, fmt.Errorf("%s: %v: %s", tool, err, text.Text)
	}
	if env.OK == res.IsError {
		return env, fmt.Errorf("%s: ok %v with isError %v", tool, env.OK, res.IsError)
	}
	return env, nil
}

// mustOK calls a tool that must succeed and decodes its data into out.
func mustOK(t testing.TB, cs *sdk.ClientSession, tool string, args any, out any) {
	t.Helper()
	env, err := callHTTP(cs, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if !env.OK {
		t.Fatalf("%s: %s %s", tool, env.Error.Code, env.Error.Details)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
}

// allTools calls each of the 14 tools once, successfully, and returns the
// names called.
func allTools(t testing.TB, cs *sdk.ClientSession, project string) []string {
	t.Helper()
	var task struct {
		TaskID string `json:"task_id"`
	}
	var session struct {
		SessionID string `json:"session_id"`
	}
	mustOK(t, cs, "server_ping", map[string]any{}, nil)
	mustOK(t, cs, "server_health", map[string]any{}, nil)
	mustOK(t, cs, "skill_list", map[string]any{}, nil)
	mustOK(t, cs, "task_create", map[string]any{"title": "over http", "project": project}, &task)
	mustOK(t, cs, "task_update", map[string]any{"task_id": task.TaskID, "status": "todo"}, nil)
	mustOK(t, cs, "task_get", map[string]any{"task_id": task.TaskID, "include_thought_trail": true}, nil)
	mustOK(t, cs, "task_list", map[string]any{"project": project}, nil)
	mustOK(t, cs, "task_next_actions", map[string]any{"project": project}, nil)
	mustOK(t, cs, "audit_session_start", map[string]any{"task_id": task.TaskID, "auditor_id": "auditor"}, &session)
	mustOK(t, cs, "thought_record", map[string]any{"task_id": task.TaskID, "type": "plan", "content": "plan it", "session_id": session.SessionID}, nil)
	mustOK(t, cs, "thought_record_list", map[string]any{"task_id": task.TaskID, "verify_chain": true}, nil)
	mustOK(t, cs, "merkle_root", map[string]any{"session_id": session.SessionID}, nil)
	mustOK(t, cs, "merkle_finalize", map[string]any{"session_id": session.SessionID}, nil)
	mustOK(t, cs, "audit_verify_chain", map[string]any{}, nil)
	return []string{"server_ping", "server_health", "skill_list", "task_create", "task_update", "task_get", "task_list",
		"task_next_actions", "audit_session_start", "thought_record", "thought_record_list", "merkle_root", "merkle_finalize", "audit_verify_chain"}
}

// TestServerAllToolsEveryProtocol drives all 14 tools through the go-sdk
// client over Streamable HTTP, once per protocol revision, and checks that
// every call is in the ledger under the token's agent.
func TestServerAllToolsEveryProtocol(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)                         // creates the file
	token, sum := addToken(t, db, "--agent", "builder") // through the server
	calls := 0
	for _, proto := range []string{"2025-06-18", "2025-11-25", ""} {
		cs, err := connectHTTP(t, s.url, token, "client-"+proto, proto)
		if err != nil {
			t.Fatalf("connect (%q): %v", proto, err)
		}
		got := cs.InitializeResult().ProtocolVersion
		want := proto
		if want == "" {
			want = "2026-07-28"
		}
		if got != want {
			t.Errorf("asked %q, negotiated %q", want, got)
		}
		var names []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if len(names) != 21 { // the contract's 14 and the knowledge tools
			t.Errorf("%s: %d tools listed: %v", want, len(names), names)
		}
		calls += len(allTools(t, cs, "proto-"+strings.ReplaceAll(cmpOrStr(proto, "new"), ".", "-")))
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("server exited %d after SIGTERM:\n%s", code, s.stderr.String())
	}
	e2eVerify(t, db)
	_, events := e2eReadLedger(t, db, 0)
	recorded := 0
	for _, e := range events {
		if e.Type == "token.issued" {
			continue
		}
		if e.Actor != "builder" {
			t.Errorf("seq %d %s: actor %q, want the token's agent", e.Seq, e.Type, e.Actor)
		}
		if e.Call != nil {
			recorded++
			if string(e.Call.Token) != sum || !strings.HasPrefix(e.Call.ClientClaim, "client-") || e.Call.Client != "" {
				t.Errorf("seq %d: tool.called token %q claim %q client %q", e.Seq, e.Call.Token, e.Call.ClientClaim, e.Call.Client)
			}
		}
	}
	if recorded != calls {
		t.Errorf("%d tool.called events, want %d", recorded, calls)
	}
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestServerUnauthorized: no token, a bad token and a revoked token are all
// 401 with WWW-Authenticate: Bearer; revoking through the CLI while the
// server runs takes effect at the next request, and stops a live session.
func TestServerUnauthorized(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	token, sum := addToken(t, db, "--agent", "temp") // through the admin socket
	post := func(token string) *http.Response {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	check401 := func(what, token string) {
		t.Helper()
		resp := post(token)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with a Bearer challenge", what, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	check401("no token", "")
	check401("bad token", token[:len(token)-2]+"xx")
	check401("not a logbook token", "abc")
	if resp := post(token); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d", resp.StatusCode)
	}
	cs, err := connectHTTP(t, s.url, token, "temp-client", "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, cs, "server_ping", map[string]any{}, nil)

	r := run(t, "token", "revoke", "--db", db, "--token-sha256", sum, "--issuer", "test-operator")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked "+sum) {
		t.Fatalf("token revoke: %v", r)
	}
	check401("revoked token", token)
	if _, err := callHTTP(cs, "server_ping", map[string]any{}); err == nil {
		t.Errorf("a session of a revoked token still answers")
	}
	if r := run(t, "token", "revoke", "--db", db, "--agent", "temp"); r.code != 2 {
		t.Errorf("revoking again (nothing valid left): %v, want exit 2", r)
	}
	list := run(t, "token", "list", "--db", db, "--json")
	var tokens []struct {
		SHA256     string `json:"sha256"`
		Agent      string `json:"agent"`
		Issuer     string `json:"issuer"`
		RevokedSeq uint64 `json:"revoked_seq"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &tokens); err != nil || len(tokens) != 1 || tokens[0].RevokedSeq == 0 ||
		tokens[0].Issuer != "test-operator" || tokens[0].SHA256 != sum {
		t.Errorf("token list: %v %+v", err, tokens)
	}
	if strings.Contains(list.stdout, token) || strings.Contains(s.stderr.String(), token) {
		t.Errorf("the token itself was printed by token list or logged by the server")
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("server exited %d:\n%s", code, s.stderr.String())
	}
	// Who was allowed to act as whom is in the log: issued, then revoked.
	_, events := e2eReadLedger(t, db, 0)
	var types []string
	for _, e := range events {
		if strings.HasPrefix(e.Type, "token.") {
			types = append(types, e.Type+" by "+e.Actor)
		}
	}
	if want := []string{"token.issued by test-operator", "token.revoked by test-operator"}; !slices.Equal(types, want) {
		t.Errorf("token events %v, want %v", types, want)
	}
	e2eVerify(t, db)
}

// TestServerActorIsTheToken: whatever a client calls itself, the actor of
// every event is its token's agent; the name is kept only as a claim.
func TestServerActorIsTheToken(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	alice, aliceSum := addToken(t, db, "--agent", "alice")
	bob, bobSum := addToken(t, db, "--agent", "bob")
	// alice says she is bob, bob says he is the operator.
	for _, c := range []struct{ token, claim string }{{alice, "bob"}, {bob, "test-operator"}} {
		for _, proto := range []string{"2025-06-18", ""} {
			cs, err := connectHTTP(t, s.url, c.token, c.claim, proto)
			if err != nil {
				t.Fatal(err)
			}
			mustOK(t, cs, "task_create", map[string]any{"title": "who am i", "project": "identity"}, nil)
		}
	}
	s.stop()
	_, events := e2eReadLedger(t, db, 0)
	want := map[string]string{aliceSum: "alice", bobSum: "bob"}
	claims := map[string]string{aliceSum: "bob", bobSum: "test-operator"}
	n := 0
	for _, e := range events {
		if e.Call == nil {
			continue
		}
		n++
		if e.Actor != want[string(e.Call.Token)] || e.Call.ClientClaim != claims[string(e.Call.Token)] {
			t.Errorf("seq %d: actor %q claim %q token %s", e.Seq, e.Actor, e.Call.ClientClaim, e.Call.Token[:8])
		}
	}
	if n != 4 {
		t.Errorf("%d calls recorded, want 4", n)
	}
}

// TestServerScopes: a scoped token lists and may call only its tools
// (ERR_FORBIDDEN otherwise, still recorded); a read-only token gets
// ERR_READ_ONLY from mutating tools.
func TestServerScopes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	scoped, _ := addToken(t, db, "--agent", "reader", "--tools", "task_get,server_ping,task_list")
	ro, _ := addToken(t, db, "--agent", "auditor", "--read-only")
	for _, proto := range []string{"2025-11-25", ""} {
		cs, err := connectHTTP(t, s.url, scoped, "scoped", proto)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := []string{"server_ping", "task_get", "task_list"}; !slices.Equal(names, want) {
			t.Errorf("%q: scoped token lists %v, want %v", proto, names, want)
		}
		mustOK(t, cs, "task_list", map[string]any{}, nil)
		for _, tool := range []string{"task_create", "merkle_finalize", "no_such_tool"} {
			env, err := callHTTP(cs, tool, map[string]any{"title": "x", "project": "p"})
			if err != nil || env.OK || env.Error.Code != "ERR_FORBIDDEN" || !strings.Contains(string(env.Error.Details), tool) {
				t.Errorf("%q: %s out of scope: %v %+v", proto, tool, err, env)
			}
		}
		cs2, err := connectHTTP(t, s.url, ro, "ro", proto)
		if err != nil {
			t.Fatal(err)
		}
		mustOK(t, cs2, "task_list", map[string]any{}, nil)
		env, err := callHTTP(cs2, "task_create", map[string]any{"title": "x", "project": "p"})
		if err != nil || env.OK || env.Error.Code != "ERR_READ_ONLY" || env.Error.Message != "this caller's token is read-only" {
			t.Errorf("%q: read-only token task_create: %v %+v", proto, err, env)
		}
		env, err = callHTTP(cs2, "task_create", map[string]any{"project": "p"})
		if err != nil || env.Error.Code != "ERR_INVALID_INPUT" {
			t.Errorf("%q: read-only token, invalid arguments: %v %+v (want ERR_INVALID_INPUT first)", proto, err, env)
		}
	}
	s.stop()
	_, events := e2eReadLedger(t, db, 0)
	outcomes := map[string]int{}
	for _, e := range events {
		if e.Call != nil {
			outcomes[e.Call.Outcome]++
		}
		if e.Type == "task.created" {
			t.Errorf("seq %d: a refused call created a task", e.Seq)
		}
	}
	if outcomes["ERR_FORBIDDEN"] != 6 || outcomes["ERR_READ_ONLY"] != 2 {
		t.Errorf("outcomes recorded %v, want 6 ERR_FORBIDDEN and 2 ERR_READ_ONLY", outcomes)
	}
}

// TestServerHTTPDefenses: /healthz answers without a token and says
// nothing more than its status; a browser's cross-origin request, a foreign
// Host on loopback and an oversized body are refused.
func TestServerHTTPDefenses(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db, "--max-body-bytes", "4096")
	token, _ := addToken(t, db, "--agent", "a")
	resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(health) != 1 || health["status"] != "ok" {
		t.Errorf("healthz: %d %v", resp.StatusCode, health)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header map[string]string
		host   string
		body   string
		want   int
	}{
		{"same-origin tooling", map[string]string{}, "", init, 200},
		{"cross-site browser", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "", init, 403},
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, "", init, 403},
		{"DNS rebinding", map[string]string{}, "evil.example", init, 403},
		{"oversized body", map[string]string{}, "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 8000) + `"}}}`, 413},
	} {
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestServerTLS: with --tls-cert/--tls-key the server speaks HTTPS only, and
// the go-sdk client calls through it with the certificate trusted.
func TestServerTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "l.db")
	s := startHTTPServer(t, db, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("url %s", s.url)
	}
	token, _ := addToken(t, db, "--agent", "tls-agent")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	c := sdk.NewClient(&sdk.Implementation{Name: "tls", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: s.url,
		HTTPClient: &http.Client{Transport: tlsBearer{token, tr}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mustOK(t, cs, "server_ping", map[string]any{}, nil)
	// Plain HTTP to the TLS port gets Go's 400 ("client sent an HTTP
	// request to an HTTPS server"), never the tools.
	if resp, err := http.Post(strings.Replace(s.url, "https://", "http://", 1), "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

type tlsBearer struct {
	token string
	next  http.RoundTripper
}

func (b tlsBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// selfSigned returns a certificate for 127.0.0.1 and its key, PEM-encoded.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "logbook test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestServerNATSFlagsNeedStore: every NATS flag of logbook server (the ones
// jetstream.AddFlags declares, and --replica-fsync) is refused without
// --store, exit 2, naming it, before any file is opened; --nats-user,
// --replicas and the rest were silently ignored, the server running on the
// file alone.
func TestServerNATSFlagsNeedStore(t *testing.T) {
	flags := flag.NewFlagSet("", flag.ContinueOnError)
	jetstream.AddFlags(flags, func(string) string { return "" })
	flags.Bool("replica-fsync", false, "")
	flags.VisitAll(func(f *flag.Flag) {
		db := filepath.Join(t.TempDir(), "ledger.db")
		arg := []string{"--" + f.Name + "=1"}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			arg = []string{"--" + f.Name}
		}
		r := run(t, append([]string{"server", "--db", db, "--listen", "127.0.0.1:0"}, arg...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--"+f.Name) || !strings.Contains(r.stderr, "only with --store") {
			t.Errorf("server %s without --store: %v, want exit 2 naming it", arg[0], r)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("server %s without --store created the ledger: %v", arg[0], err)
		}
	})
}

// TestServerHintNeedsALiveSocket: a file held by a server without an admin
// socket, beside which a killed server left its socket file, is said to be
// locked, not to be held by a server to take a snapshot through: that
// snapshot, through a socket no one answers, fails on the lock too.
func TestServerHintNeedsALiveSocket(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	l, err := net.Listen("unix", db+".admin.sock")
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file of a server killed with -9
	startHTTPServer(t, db, "--admin-socket", "none")
	r := run(t, "verify", "--db", db, "--lock-timeout", "200ms")
	if r.code != 2 || !strings.Contains(r.stderr, "locked by another process") || strings.Contains(r.stderr, "snapshot") {
		t.Errorf("verify on a file held beside a dead socket: %s, want exit 2 saying it is locked, no snapshot hint", r)
	}
}

// TestServerHeldFileSaysWhatToDo: an auditor's command on the file a
// logbook server holds is refused (exit 2) saying what to do — audit a
// snapshot, which works through the admin socket, or, for rebuild, stop
// the server, or, for serve, bridge to it with serve --connect — not only
// that the file is locked, which waiting longer would never change.
func TestServerHeldFileSaysWhatToDo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	startHTTPServer(t, db)
	// The lock is not waited for its whole --lock-timeout (which would
	// say "waited 10s", after 10 s): a server never lets it go.
	for _, args := range [][]string{{"verify"}, {"tasks"}, {"root"}, {"replay"}, {"prove", "inclusion", "--seq", "1"}, {"rebuild"}} {
		r := run(t, append(args, "--db", db, "--lock-timeout", "10s")...)
		want := "logbook snapshot --db " + db + " --out COPY"
		if args[0] == "rebuild" {
			want = "stop it first"
		}
		if r.code != 2 || !strings.Contains(r.stderr, "locked by another process") || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "waited 10s") {
			t.Errorf("%v on a server's file: %s, want exit 2 saying %q at once", args, r, want)
		}
	}
	// An agent's serve on it is told to bridge to the server.
	if r := run(t, "serve", "--db", db, "--lock-timeout", "10s"); r.code != 2 || !strings.Contains(r.stderr, "logbook serve --connect") || strings.Contains(r.stderr, "waited 10s") {
		t.Errorf("serve on a server's file: %s, want exit 2 saying to use serve --connect at once", r)
	}
	// A second server on it is told the first holds it.
	if r := run(t, "server", "--db", db, "--listen", "127.0.0.1:0"); r.code != 2 || !strings.Contains(r.stderr, "a logbook server holds it") {
		t.Errorf("a second server on the file: %s, want exit 2 saying a server holds it", r)
	}
	// So is one keeping its copy of a stream there (the copy is read first).
	if r := run(t, "server", "--db", db, "--listen", "127.0.0.1:0", "--store", "nats://127.0.0.1:1", "--stream", "s"); r.code != 2 || !strings.Contains(r.stderr, "a logbook server holds it") {
		t.Errorf("a second server, with --store, on the file: %s, want exit 2 saying a server holds it", r)
	}
	// migrate reads the file as verify does.
	t.Setenv("LOGBOOK_NATS_PASSWORD", "app")
	if r := run(t, "migrate", "--from", db, "--to", natsServer(t), "--stream", "s", "--nats-user", "app", "--replicas", "1", "--allow-unreplicated"); r.code != 2 ||
		!strings.Contains(r.stderr, "logbook snapshot --db "+db+" --out COPY") {
		t.Errorf("migrate of a server's file: %s, want exit 2 saying to migrate a snapshot", r)
	}
	out := filepath.Join(t.TempDir(), "copy.db")
	wantExit(t, run(t, "snapshot", "--db", db, "--out", out), 0, "snapshot of a server's file")
	wantExit(t, run(t, "verify", "--db", out), 0, "verify of the snapshot")
}

// TestServeBesideLaterServerSaysWhy: a serve process already running when
// a logbook server is started on its file can no longer commit (the server
// holds the file for its lifetime); each of its calls is refused saying a
// logbook server holds the file and how to reach it, not only that the
// file is locked.
func TestServeBesideLaterServerSaysWhy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	srv := startE2E(t, e2eConfig{DB: db, Agent: "early", Args: []string{"--lock-timeout", "300ms"}})
	srv.initialize("2025-11-25")
	var created struct {
		TaskID string `json:"task_id"`
	}
	srv.ok("task_create", map[string]any{"title": "before the server", "project": "p"}, &created)
	startHTTPServer(t, db)
	r := srv.call("thought_record", map[string]any{"task_id": created.TaskID, "type": "analysis", "content": "after the server"})
	if d := string(r.Env.Error.Details); r.code() != "ERR_STORAGE" || !strings.Contains(d, "held by a logbook server") || !strings.Contains(d, "logbook serve --connect") {
		t.Errorf("a call of a serve process beside a later server: %s", r.Result)
	}
}

// TestServeBesideStoppedHolderSaysWhy: a process that holds the file and
// is stopped (SIGSTOP, ^Z) keeps it until resumed; meanwhile a serve
// process's calls time out saying which process holds it, that it is
// stopped and how to resume it, and a serve or CLI command that cannot
// open the file says the same.
func TestServeBesideStoppedHolderSaysWhy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	srv := startE2E(t, e2eConfig{DB: db, Agent: "early", Args: []string{"--lock-timeout", "300ms"}})
	srv.initialize("2025-11-25")
	srv.ok("task_create", map[string]any{"title": "before the server", "project": "p"}, nil)
	holder := startHTTPServer(t, db)
	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer holder.cmd.Process.Signal(syscall.SIGCONT)
	pid := strconv.Itoa(holder.cmd.Process.Pid)
	says := func(what, d string) {
		t.Helper()
		if !strings.Contains(d, "held by process "+pid) || !strings.Contains(d, "which is stopped") || !strings.Contains(d, "kill -CONT "+pid) {
			t.Errorf("%s while the process holding the file is stopped: %s", what, d)
		}
	}
	r := srv.call("task_create", map[string]any{"title": "while the server is stopped", "project": "p"})
	if r.code() != "ERR_STORAGE" {
		t.Errorf("a call while the process holding the file is stopped: %s", r.Result)
	}
	says("a call", string(r.Env.Error.Details))
	res := run(t, "tasks", "--db", db, "--lock-timeout", "300ms")
	if res.code == 0 {
		t.Errorf("logbook tasks on a file held: exit 0")
	}
	says("logbook tasks", res.stderr)
}
