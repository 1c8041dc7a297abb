package mcp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/logbook-dev/logbook/domain"
)

// BridgeOptions configure Bridge.
type BridgeOptions struct {
	URL     string // the server's MCP endpoint, e.g. http://127.0.0.1:7460/mcp
	Token   string // the bearer token sent with every request
	Version string // serverInfo.version towards the stdio client
	Logger  *slog.Logger
	// HTTPClient, if set, carries the requests (its Transport gets the
	// token added); default http.DefaultTransport.
	HTTPClient *http.Client
	// MaxMessageBytes bounds one inbound stdio line; default DefaultMaxMessageBytes.
	MaxMessageBytes int
	// CallTimeout bounds how long a forwarded call waits for the server's
	// answer (a server stopped but not dead never answers); default
	// DefaultBridgeCallTimeout. Past it the call is answered with a
	// JSON-RPC error: its outcome is unknown.
	CallTimeout time.Duration
}

// DefaultBridgeCallTimeout is BridgeOptions.CallTimeout's default: far past
// a commit waiting out a lock timeout, as a relayed call's (server's
// relayAnswerWait).
const DefaultBridgeCallTimeout = time.Minute

// Bridge serves, over newline-delimited JSON-RPC on in and out, the tools
// of the logbook server at opts.URL: it connects with the token (failing at
// once if the server refuses it), publishes the tools the server lists for
// that token, and forwards every tools/call, answering with the server's
// result unchanged. Nothing is stored locally: the server records every
// call, with the stdio client's clientInfo.name as its claim. A request
// the server turns away without beginning it (429, or 503 with
// Retry-After) is sent again after its Retry-After, a call's within
// opts.CallTimeout. A call the server gives no answer of its own (not
// reached, refused at the HTTP level, no answer within opts.CallTimeout)
// is answered with a JSON-RPC error whose code says whether it was
// recorded (callFailure); a URL that is no logbook MCP endpoint is an
// error at once (connectFailure).
// Bridge returns as Server.Run does.
func Bridge(ctx context.Context, opts BridgeOptions, in io.Reader, out io.Writer) error {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultBridgeCallTimeout
	}
	httpc := &http.Client{}
	if opts.HTTPClient != nil {
		*httpc = *opts.HTTPClient
	}
	httpc.Transport = bearer{token: opts.Token, next: httpc.Transport}
	// No redirect is followed: bearer puts the token on every request the
	// client sends, so one would hand it to wherever the redirect points
	// (attack review). A logbook endpoint never redirects; a 3xx is
	// answered as a URL that is no endpoint (connectFailure).
	httpc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	quiet := slog.New(quietHandler{opts.Logger.Handler()})
	client := sdk.NewClient(&sdk.Implementation{Name: "logbook-bridge", Version: opts.Version}, &sdk.ClientOptions{Logger: quiet})
	var hello posted // the initialize POST: a refused token is told apart
	remote, err := client.Connect(context.WithValue(ctx, postedKey{}, &hello), &sdk.StreamableClientTransport{Endpoint: opts.URL, HTTPClient: httpc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return connectFailure(opts.URL, &hello, err)
	}
	defer remote.Close()

	forward := func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		params := &sdk.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
		if name := clientName(req); name != "" {
			params.Meta = sdk.Meta{sdk.MetaKeyClientInfo: &sdk.Implementation{Name: name}}
		}
		// Once sent, a call is the server's to record: the stdio client
		// going away does not withdraw it. But an answer that does not
		// come (a server stopped, not dead) is waited for only so long:
		// it left the agent's client, and the bridge's exit, waiting for
		// ever.
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.CallTimeout)
		defer cancel()
		var post posted
		res, err := remote.CallTool(context.WithValue(callCtx, postedKey{}, &post), params)
		if err != nil {
			opts.Logger.Warn("forwarding a tool call failed", "tool", domain.Clip(req.Params.Name), "err", err)
			if post.forNow.Load() {
				status := int(post.status.Load())
				opts.Logger.Warn("the logbook server turned a call away for now, each time it was sent"+busyHint(status),
					"tool", domain.Clip(req.Params.Name), "status", status, "sends", post.attempts.Load(), "server_said", post.said())
			}
			return nil, callFailure(&post, err)
		}
		return asDirect(verbatim(res)), nil
	}
	local := sdk.NewServer(&sdk.Implementation{Name: "logbook", Version: opts.Version}, &sdk.ServerOptions{
		Logger:       quiet,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		// The model behind the stdio client reads the server's
		// instructions, as it would from the server itself.
		Instructions: remote.InitializeResult().Instructions,
		// The list is the token's, as the server's own is the caller's.
		SetCacheable: privateCache,
	})
	var list listed // the tools/list answers, as the server wrote them
	var tools []*sdk.Tool
	for t, err := range remote.Tools(context.WithValue(ctx, listedKey{}, &list), nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", opts.URL, err)
		}
		tools = append(tools, t)
	}
	written := list.schemas()
	for _, t := range tools {
		w := written[t.Name]
		t.InputSchema, t.OutputSchema = verbatimSchema(t.InputSchema, w.In), verbatimSchema(t.OutputSchema, w.Out)
		if err := addTool(local, t, forward); err != nil {
			return err
		}
	}
	// Every tools/call goes to the server, known tool or not: the server
	// decides, and records it.
	local.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if call, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && call.Params != nil {
				return forward(ctx, call)
			}
			return next(ctx, method, req)
		}
	})
	return serveStdio(ctx, local, in, out, opts.MaxMessageBytes, opts.Logger, nil)
}

// The JSON-RPC error codes serve --connect answers a tools/call with when
// the logbook server gave it no answer of its own (a refusal the server
// wrote as a JSON-RPC error, such as -32020, is passed on with its code).
// They are public API, documented in TOOLS.md: add, never renumber.
const (
	// CodeBridgeTokenRefused: the server refused the bridge's token (401:
	// unknown or revoked). Not recorded; no later call will be.
	CodeBridgeTokenRefused = -32031
	// CodeBridgeRefused: the server refused the request before any tool
	// ran (a 4xx: 403, 413, 400...; or a redirect, not followed). Not
	// recorded.
	CodeBridgeRefused = -32032
	// CodeBridgeBusy: the server turned the call away for now (429, 503
	// with Retry-After) each time the bridge sent it, until its deadline.
	// Not recorded; call again shortly.
	CodeBridgeBusy = -32033
	// CodeBridgeNotSent: the call never left the bridge (no connection
	// could be made, a tool name no header can carry). Not recorded.
	CodeBridgeNotSent = -32034
	// CodeBridgeUnknown: the call was sent and no answer of the server's
	// came (the connection lost, no answer within the deadline, a 5xx
	// from the server or a proxy). It may or may not have been recorded.
	CodeBridgeUnknown = -32035
)

// callFailure is the JSON-RPC error a forwarded call that got no result
// is answered with: what became of it (post), whether it was recorded,
// what to do. The agent reads the first sdkRoom characters; the SDK's
// own words (err) are logged, not sent.
func callFailure(post *posted, err error) error {
	status := int(post.status.Load())
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	said := "" // what the server said, after what the agent must read
	if s := post.said(); s != "" && !post.rpc.Load() {
		said = ": " + s
	}
	fail := func(code int64, format string, args ...any) error {
		return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
	}
	switch rpc, isRPC := errors.AsType[*jsonrpc.Error](err); {
	case status >= 200 && status < 300 && isRPC:
		// The server's own answer, a JSON-RPC error: passed on as such.
		return rpc
	case status == http.StatusUnauthorized:
		// Refused before anything ran: the token is unknown or was
		// revoked; every later call will be too.
		return fail(CodeBridgeTokenRefused, "the logbook server refused the bridge's token (401: unknown or revoked); not recorded: restart the bridge with a valid token")
	case post.forNow.Load():
		// Turned away before anything ran, each time the bridge sent it
		// (bearer), until waiting more would pass its deadline.
		return fail(CodeBridgeBusy, "the logbook server turned the call away %d times (%d %s: %s); not recorded: call again shortly",
			post.attempts.Load(), status, http.StatusText(status), busyReason(status))
	case status >= 400 && status < 500:
		// Refused before any tool ran: 403 (a Host or Origin refused),
		// 400 (say, a call with no tool name, which the SDK's client
		// sends without the Mcp-Name header the server then requires),
		// 413 (too large). A refusal the server wrote as a JSON-RPC
		// error keeps its code and message.
		if isRPC && post.rpc.Load() {
			return fail(rpc.Code, "the logbook server refused the request (%s); the call was not recorded: %s", text, rpc.Message)
		}
		return fail(CodeBridgeRefused, "the logbook server refused the request (%s); the call was not recorded%s", text, said)
	case status >= 300 && status < 400:
		// A redirect, not followed (it would take the token along: see
		// Bridge). A logbook server never answers one to a call it ran;
		// one from a proxy in front ran nothing of it either.
		return fail(CodeBridgeRefused, "the logbook server (or a proxy) redirected the request (%s); the call was not recorded: the bridge follows no redirect (its token goes to the --connect URL only)%s", text, said)
	case status >= 300:
		// Reached, and answered with a failure (a proxy in front whose
		// upstream ended, say): the call may have run.
		return fail(CodeBridgeUnknown, "the logbook server (or a proxy) answered %s; the call may or may not have been recorded%s", text, said)
	case !post.tried.Load():
		// Never sent: no connection could be made (the server down or
		// restarting), a header net/http refuses to send, or the SDK's
		// client has ended its connection.
		return fail(CodeBridgeNotSent, "the call was not sent to the logbook server, and was not recorded: %s", notSentReason(err))
	case errors.Is(err, context.DeadlineExceeded):
		return fail(CodeBridgeUnknown, "the logbook server did not answer in time; the call may or may not have been recorded")
	}
	return fail(CodeBridgeUnknown, "the connection to the logbook server failed before its answer; the call may or may not have been recorded")
}

// notSentReason says, in a few words, why a call was not sent.
func notSentReason(err error) string {
	switch {
	case errors.Is(err, errUnsendable):
		return errUnsendable.Error()
	case errors.Is(err, sdk.ErrConnectionClosed):
		// The SDK's client ended its connection (an answer it could
		// not read, the log says which): it sends nothing more.
		return "its session with the server ended: restart the bridge"
	}
	return "no connection to the server could be made"
}

// connectFailure is the error the bridge ends with when it could not open
// its session with the server at url: what was found there (hello, the
// last POST), and what to do.
func connectFailure(url string, hello *posted, err error) error {
	status := int(hello.status.Load())
	kind := ""
	if k := hello.kind.Load(); k != nil && *k != "" {
		kind = " (" + *k + ")"
	}
	const endpoint = "a logbook server's MCP endpoint is http[s]://HOST:PORT/mcp"
	switch {
	case status == http.StatusUnauthorized:
		return fmt.Errorf("connect to %s: the logbook server refused the bridge's token (401: unknown or revoked; logbook token add issues one): %w", url, err)
	case !hello.tried.Load():
		return fmt.Errorf("connect to %s: nothing answers there (is logbook server running, on that port?): %w", url, err)
	case errors.Is(err, http.ErrSchemeMismatch):
		return fmt.Errorf("connect to %s: not a logbook MCP endpoint: the server there speaks plain HTTP, not HTTPS (%s): %w", url, endpoint, err)
	case errors.As(err, new(*tls.CertificateVerificationError)):
		return fmt.Errorf("connect to %s: the server's TLS certificate is not trusted here: %w", url, err)
	case status >= 300 && status < 400:
		return fmt.Errorf("connect to %s: not a logbook MCP endpoint: it answered the bridge's POST %d %s, a redirect, which the bridge does not follow (its token goes to the --connect URL only): give the URL of the endpoint itself (%s)", url, status, http.StatusText(status), endpoint)
	case status >= 300:
		// What it said, when it is a few words of text (not a page).
		said := hello.said()
		if said == http.StatusText(status) || kind != "" && !strings.Contains(kind, "text/plain") {
			said = ""
		}
		if said != "" {
			said = ": " + strconv.Quote(domain.ClipAt(said, 128))
		}
		return fmt.Errorf("connect to %s: not a logbook MCP endpoint: it answered the bridge's POST %d %s%s%s (%s)", url, status, http.StatusText(status), kind, said, endpoint)
	case status >= 200:
		return fmt.Errorf("connect to %s: not a logbook MCP endpoint: it answered the bridge's POST %d %s%s, not with an MCP message (%s)", url, status, http.StatusText(status), kind, endpoint)
	}
	return fmt.Errorf("connect to %s: %w", url, err)
}

// verbatim gives a forwarded result's structuredContent as the server sent
// it: the SDK's client decoded it into Go maps, which re-encode with their
// members sorted (and integers as doubles), no longer the same JSON as the
// text item beside it. The server sends one text item holding exactly
// that JSON (the envelope), so it is taken from there when it is that.
func verbatim(res *sdk.CallToolResult) *sdk.CallToolResult {
	if res == nil || res.StructuredContent == nil || len(res.Content) != 1 {
		return res
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return res
	}
	var same any // (Unmarshal refuses text that is not JSON)
	if err := json.Unmarshal([]byte(text.Text), &same); err != nil || !reflect.DeepEqual(same, res.StructuredContent) {
		return res
	}
	res.StructuredContent = json.RawMessage(text.Text)
	return res
}

// listed keeps the bodies of the tools/list answers, as the server wrote
// them (bearer tees each into one, for a request whose context holds it).
type listed struct {
	bodies []*bytes.Buffer
}

type listedKey struct{}

// schemas gives each tool's schemas as the server wrote them.
func (l *listed) schemas() map[string]struct{ In, Out json.RawMessage } {
	out := map[string]struct{ In, Out json.RawMessage }{}
	for _, b := range l.bodies {
		var msg struct {
			Result struct {
				Tools []struct {
					Name string          `json:"name"`
					In   json.RawMessage `json:"inputSchema"`
					Out  json.RawMessage `json:"outputSchema"`
				} `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(b.Bytes(), &msg) != nil {
			continue // an event stream, say: the decoded schemas serve
		}
		for _, t := range msg.Result.Tools {
			out[t.Name] = struct{ In, Out json.RawMessage }{t.In, t.Out}
		}
	}
	return out
}

// verbatimSchema gives a listed tool's schema as the server wrote it: the
// SDK's client decoded it into maps, which re-encode with their members
// sorted (the properties no longer in the order the server gives them),
// not the bytes serve's own stdio lists. written is used only when it is
// the very value decoded.
func verbatimSchema(decoded any, written json.RawMessage) any {
	var same any
	if written == nil || json.Unmarshal(written, &same) != nil || !reflect.DeepEqual(same, decoded) {
		return decoded
	}
	return written
}

// asDirect makes a forwarded result what serve's own stdio answers: the
// SDK serving the logbook server marks each result with its serverInfo in
// _meta for a client of the newest protocol (the bridge's own client is
// one), which no result of serve's own carries.
func asDirect(res *sdk.CallToolResult) *sdk.CallToolResult {
	if res == nil || res.Meta == nil {
		return res
	}
	delete(res.Meta, sdk.MetaKeyServerInfo)
	if len(res.Meta) == 0 {
		res.Meta = nil
	}
	return res
}

// addTool publishes a tool the server listed; AddTool panics on a schema it
// cannot take, which here is the server's fault, not a crash of ours.
func addTool(s *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the server listed a tool the bridge cannot publish: %v", p)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// bearer adds the Authorization header to every request, and notes in a
// forwarded call's posted (in the request's context) that its POST went
// out and what status it was answered with.
type bearer struct {
	token string
	next  http.RoundTripper
}

// posted is what became of the POST carrying a forwarded call: whether
// the bridge sent it, and the HTTP status it was answered with (0: none).
// A call whose POST never went out, or was refused with a 4xx (401, 403,
// 400 for a header the SDK refuses, 413, 429: before any tool runs) or a
// 503 refusing it for now (refusedForNow), is not recorded; any other
// failure leaves its outcome unknown (callFailure).
type posted struct {
	tried    atomic.Bool
	status   atomic.Int32
	forNow   atomic.Bool            // the last answer refused it for now
	attempts atomic.Int32           // times sent
	text     atomic.Pointer[string] // what the last failure answer said
	rpc      atomic.Bool            // that answer was a JSON-RPC error of the server's
	kind     atomic.Pointer[string] // the last answer's Content-Type
}

// said is what the server's last failure answer (a status not 2xx) said.
func (p *posted) said() string {
	if t := p.text.Load(); t != nil {
		return *t
	}
	return ""
}

// busyReason is what a refusal for now of status means, in a few words.
func busyReason(status int) string {
	if status == http.StatusTooManyRequests {
		return "busy for this token"
	}
	return "busy"
}

// busyHint tells an operator what to do about a refusal for now.
func busyHint(status int) string {
	if status == http.StatusTooManyRequests {
		return ": the bound on requests in flight is the token's, shared by every bridge and client using it; give busy agents tokens of their own"
	}
	return ": the server holds as many connections or request bodies as it may (--max-conns, --max-body-bytes)"
}

// refusedForNow reports whether resp refuses a request the server did
// not begin, to be sent again shortly: 429 (logbook server: the token has
// as many requests in flight as one may) and a 503 with Retry-After (it
// holds as many connections or request bodies as it may; it gives each
// such refusal a Retry-After). A 503 without one is no such refusal: a
// proxy in front answers it when its upstream connection ended after the
// request was sent (Envoy's "disconnect/reset before headers"), which
// may have run the call, and a write sent again would run twice.
func refusedForNow(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return resp.Header.Get("Retry-After") != ""
	}
	return false
}

// Sending again a request refused for now: at most maxSends times in all,
// each after the answer's Retry-After (within [minRetryWait,
// maxRetryWait]; minRetryWait without one), and never past the request's
// deadline (a call's CallTimeout).
const (
	maxSends     = 30
	minRetryWait = 50 * time.Millisecond
	maxRetryWait = 5 * time.Second
)

// retryWait is how long to wait before sending again a request resp
// refused for now.
func retryWait(resp *http.Response) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || secs < 0 {
		return minRetryWait
	}
	return min(max(time.Duration(secs)*time.Second, minRetryWait), maxRetryWait)
}

type postedKey struct{}

// cancelNotice tells whether r carries notifications/cancelled. The SDK's
// client sends it once a call's deadline has passed, after the call has
// returned and with the call's context values (its posted): what it is
// answered (202, or a 429 or 403 of its own) says nothing of the call,
// which may have run, and must not be read as the call's answer
// (callFailure would say "not recorded", and the agent call again).
func cancelNotice(r *http.Request) bool {
	if r.GetBody == nil {
		return false // the SDK's client always gives one
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	// A notification is small; a call's body may be up to the server's
	// limit, and is not read past this.
	head, _ := io.ReadAll(io.LimitReader(body, 4<<10))
	msg, err := jsonrpc.DecodeMessage(head)
	req, ok := msg.(*jsonrpc.Request)
	return err == nil && ok && !req.ID.IsValid() && req.Method == methodCancelled
}

// errUnsendable is a request net/http would refuse to send.
var errUnsendable = errors.New("a header value holds a control character (the SDK's client puts the tool name in Mcp-Name)")

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	if r.Method != http.MethodPost {
		return next.RoundTrip(r)
	}
	p, _ := r.Context().Value(postedKey{}).(*posted)
	if p == nil || cancelNotice(r) {
		p = new(posted)
	}
	if !validHeaderValues(r.Header) {
		// net/http refuses it before dialling: never sent.
		return nil, errUnsendable
	}
	resp, err := sendPost(next, r, p)
	if l, _ := r.Context().Value(listedKey{}).(*listed); l != nil && err == nil {
		// tools/list: its answer as the server wrote it (verbatimSchema).
		b := new(bytes.Buffer)
		l.bodies = append(l.bodies, b)
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, b), resp.Body}
	}
	return resp, err
}

// sendPost sends r, and again while the server refuses it for now, noting in
// p what happened.
func sendPost(next http.RoundTripper, r *http.Request, p *posted) (*http.Response, error) {
	// A request refused for now (a bound of the server's, such as the
	// token's requests in flight, which every bridge using the token
	// shares) was never begun: it is sent again, whatever it carries.
	ctx := r.Context()
	for sends := 1; ; sends++ {
		p.tried.Store(true)
		p.attempts.Add(1)
		// What the send before was answered says nothing of this one: a
		// send that fails once sent (its answer lost) may have run.
		p.status.Store(0)
		p.forNow.Store(false)
		resp, err := next.RoundTrip(r)
		if err != nil {
			if dialFailed(err) {
				// No connection was made (the server is down or
				// restarting: connection refused): nothing was sent.
				p.tried.Store(false)
			}
			return resp, err
		}
		p.status.Store(int32(resp.StatusCode))
		kind := resp.Header.Get("Content-Type")
		p.kind.Store(&kind)
		p.forNow.Store(refusedForNow(resp))
		p.rpc.Store(false)
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		text, _ := io.ReadAll(io.LimitReader(resp.Body, maxFailureBody))
		resp.Body.Close()
		said := domain.ClipAt(strings.TrimSpace(strings.ToValidUTF8(string(text), "\uFFFD")), 256)
		p.text.Store(&said)
		if !p.forNow.Load() {
			resp.Body = io.NopCloser(bytes.NewReader(asRPCError(text, p, resp)))
			return resp, nil
		}
		resp.Body = io.NopCloser(bytes.NewReader(text))
		wait := retryWait(resp)
		deadline, timed := ctx.Deadline()
		if sends >= maxSends || r.GetBody == nil || timed && time.Until(deadline) < wait {
			return resp, nil
		}
		body, err := r.GetBody()
		if err != nil {
			return resp, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			body.Close()
			return resp, nil
		case <-t.C:
		}
		r = r.Clone(ctx)
		r.Body = body
	}
}

// maxFailureBody bounds what is read of an answer whose status is not 2xx:
// the server's refusals are a line of text or one JSON-RPC error.
const maxFailureBody = 64 << 10

// asRPCError gives the SDK's client a failure answer (a status not 2xx)
// as a JSON-RPC error: the server's own when the body is one (p.rpc: the
// SDK passes its code on, -32020 say), else one made of what the body
// said. The SDK's client ends its connection on a failure answer that is
// no JSON-RPC error (but for 429, 500, 502, 503, 504): one 401, 403 or
// 413 answered every later call of the bridge "not sent". Given one, it
// only fails the request.
func asRPCError(body []byte, p *posted, resp *http.Response) []byte {
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
			p.rpc.Store(true)
			return body
		}
	}
	made, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "error": map[string]any{
		"code": CodeBridgeRefused, "message": fmt.Sprintf("%d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), p.said())}})
	resp.ContentLength = int64(len(made))
	return made
}

// dialFailed reports whether err is a failure to connect to the server at
// all (net/http's dial: connection refused, no route, no such host), after
// which nothing of the request was sent. A connection that failed once
// made (reset, closed mid-answer) is not: the request may have run.
func dialFailed(err error) bool {
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && oe.Op == "dial"
}

// validHeaderValues is net/http's own check of header values (no control
// character but tab), which it applies before sending anything.
func validHeaderValues(h http.Header) bool {
	for _, vs := range h {
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
					return false
				}
			}
		}
	}
	return true
}
