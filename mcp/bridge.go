package mcp

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
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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
// opts.CallTimeout. A call the server cannot be reached for, or does not
// answer within opts.CallTimeout, is answered with a JSON-RPC error.
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
	quiet := slog.New(quietHandler{opts.Logger.Handler()})
	client := sdk.NewClient(&sdk.Implementation{Name: "logbook-bridge", Version: opts.Version}, &sdk.ClientOptions{Logger: quiet})
	var hello posted // the initialize POST: a refused token is told apart
	remote, err := client.Connect(context.WithValue(ctx, postedKey{}, &hello), &sdk.StreamableClientTransport{Endpoint: opts.URL, HTTPClient: httpc, DisableStandaloneSSE: true}, nil)
	switch {
	case err != nil && hello.status.Load() == http.StatusUnauthorized:
		return fmt.Errorf("connect to %s: the logbook server refused the bridge's token (401: unknown or revoked; logbook token add issues one): %w", opts.URL, err)
	case err != nil:
		return fmt.Errorf("connect to %s: %w", opts.URL, err)
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
			switch status := post.status.Load(); {
			case status == http.StatusUnauthorized:
				// Refused before anything ran: the token is unknown or
				// was revoked (and the SDK's client sends nothing more).
				return nil, fmt.Errorf("the logbook server refused the bridge's token (401: unknown or revoked); not recorded: restart the bridge with a valid token: %w", err)
			case post.forNow.Load():
				// Turned away before anything ran, each time the bridge
				// sent it (bearer), until waiting more would pass its
				// deadline. The agent reads the first sdkRoom characters;
				// the operator, the log.
				opts.Logger.Warn("the logbook server turned a call away for now, each time it was sent"+busyHint(int(status)),
					"tool", req.Params.Name, "status", status, "sends", post.attempts.Load(), "server_said", post.said())
				return nil, fmt.Errorf("the logbook server turned the call away %d times (%d %s: %s); not recorded: call again shortly: %w",
					post.attempts.Load(), status, http.StatusText(int(status)), busyReason(int(status)), err)
			case status >= 400 && status < 500:
				// Refused before any tool ran: 403 (a Host or Origin
				// refused), 400 (say, a call with no tool name, which the
				// SDK's client sends without the Mcp-Name header the
				// server then requires), 413 (too large).
				return nil, fmt.Errorf("the logbook server refused the request (%d %s); the call was not recorded: %w", status, http.StatusText(int(status)), err)
			case status >= 500:
				// Reached, and answered with a failure (a proxy in front
				// whose upstream ended, say): the call may have run.
				return nil, fmt.Errorf("the logbook server (or a proxy) answered %d %s; the call may or may not have been recorded: %w", status, http.StatusText(int(status)), err)
			case !post.tried.Load():
				// Never sent: no connection could be made (the server
				// down or restarting), the connection to the server had
				// ended (after a refusal, say) or the call timed out first.
				return nil, fmt.Errorf("the call was not sent to the logbook server, and was not recorded: %w", err)
			}
			return nil, fmt.Errorf("the logbook server could not be reached; the call may or may not have been recorded: %w", err)
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
// 400 for a header the SDK refuses, 429: before any tool runs) or a 503
// refusing it for now (refusedForNow), is not recorded; any other failure
// leaves its outcome unknown.
type posted struct {
	tried    atomic.Bool
	status   atomic.Int32
	forNow   atomic.Bool            // the last answer refused it for now
	attempts atomic.Int32           // times sent
	text     atomic.Pointer[string] // what the last refusal for now said
}

// said is what the server's last refusal for now said.
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
	if p == nil {
		p = new(posted)
	}
	if !validHeaderValues(r.Header) {
		// net/http refuses it before dialling: never sent.
		return nil, errors.New("a header value holds a control character (the SDK's client puts the tool name in Mcp-Name)")
	}
	resp, err := sendPost(next, r, p)
	if err == nil {
		resp = perRequest(r, resp)
	}
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
		p.forNow.Store(refusedForNow(resp))
		if !p.forNow.Load() {
			return resp, nil
		}
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		said := domain.ClipAt(strings.TrimSpace(strings.ToValidUTF8(string(text), "\uFFFD")), 256)
		p.text.Store(&said)
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

// dialFailed reports whether err is a failure to connect to the server at
// all (net/http's dial: connection refused, no route, no such host), after
// which nothing of the request was sent. A connection that failed once
// made (reset, closed mid-answer) is not: the request may have run.
func dialFailed(err error) bool {
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && oe.Op == "dial"
}

// perRequest gives a plain 4xx or 5xx answer to a POSTed request (no
// JSON-RPC error in it: the logbook server's 413 for a body past
// --max-body-bytes, refused on its headers, its 408 for a body late, a
// proxy's 403 or 501) the form of a JSON-RPC error answering that request,
// which it is: the server refused, or failed, that request alone. The SDK's
// client takes such a plain answer (but 500, 502, 503, 504 and 429) for a
// broken connection and sends nothing more, and every later call of the
// agent was answered "not sent", until the bridge was restarted. A 401 (the
// token refused: nothing more is sent, and the agent is told to restart the
// bridge) and a 404 (a session the server no longer has) keep their
// meaning. The status stays, for forward to tell the agent what it means.
func perRequest(r *http.Request, resp *http.Response) *http.Response {
	switch code := resp.StatusCode; {
	case code < 400, code == http.StatusUnauthorized, code == http.StatusNotFound:
		return resp
	}
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(text))
	var answer struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(text, &answer) == nil && len(answer.Error) > 0 {
		return resp // a JSON-RPC error already: the SDK's client reads it
	}
	id := postedID(r)
	if id == nil {
		return resp
	}
	said := domain.ClipAt(strings.TrimSpace(strings.ToValidUTF8(string(text), "\uFFFD")), 256)
	// -32603: the code forward's own error is answered with, which the
	// agent got for such a refusal before (the SDK passes a JSON-RPC
	// error's code on to it).
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": -32603, "message": fmt.Sprintf("%d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), said)}})
	if err != nil {
		return resp
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(len(msg))
	resp.Body = io.NopCloser(bytes.NewReader(msg))
	return resp
}

// postedID is the JSON-RPC id of the request r carries (requestID), nil
// for none (a notification) or a body that cannot be read again.
func postedID(r *http.Request) json.RawMessage {
	if r.GetBody == nil {
		return nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil || len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return nil
	}
	if id := requestID(data); string(id) != "null" {
		return id
	}
	return nil
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
