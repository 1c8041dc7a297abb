package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/domain"
)

// Options configure a Server.
type Options struct {
	Name    string // serverInfo.name; default "logbook"
	Version string // serverInfo.version; default "dev"
	// Instructions are sent to the client at initialization; default
	// Instructions (the package's).
	Instructions string
	// Logger receives internal causes (unmapped errors, panics with their
	// stack, transport trouble). Default slog.Default(), i.e. stderr: stdout
	// belongs to the protocol.
	Logger *slog.Logger
	// MaxMessageBytes bounds one inbound JSON-RPC line; default DefaultMaxMessageBytes.
	MaxMessageBytes int
}

// ToolSpec describes one tool as tools/list publishes it.
type ToolSpec struct {
	Name         string
	Title        string // for people: a short human-readable name
	Description  string
	ReadOnly     bool            // the tool changes no domain state (it is still audited)
	InputSchema  json.RawMessage // type object, additionalProperties false
	OutputSchema json.RawMessage // type object: the envelope around the tool's data
}

// Server is logbook's MCP edge. It publishes the tools, validates every call's
// arguments and hands every call, valid or not, to commands.Service.Do
// exactly once, which records it and decides its outcome.
type Server struct {
	do      func(context.Context, commands.Call) ([]byte, error)
	log     *slog.Logger
	maxLine int
	sdk     *sdk.Server
	tools   []*tool
	byName  map[string]*tool
}

// tool is one entry of the catalogue (task.go, thought.go, session.go, skill.go, system.go,
// finding.go, learning.go, memory.go, knowledge.go).
type tool struct {
	name        string
	title       string // human-readable, published as the tool's title
	description string
	cmd         *commands.Command // what the tool runs; its domain rules are the arguments'
	out         *schema           // the data of a success envelope
	// New generates the rest from cmd: readOnly (the command changes no
	// domain state) and the arguments' schema.
	readOnly bool
	in       *schema
}

// stages are the steps every tools/call goes through, in order.
var stages = []string{"recover", "validate", "audit+commit"}

// New returns a Server that runs tool calls on svc.
func New(svc *commands.Service, opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "logbook"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Instructions == "" {
		opts.Instructions = Instructions
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	s := &Server{
		do:      svc.Do,
		log:     opts.Logger,
		maxLine: opts.MaxMessageBytes,
		byName:  make(map[string]*tool),
	}
	for _, t := range allTools() {
		t.readOnly = !t.cmd.Mutates()
		t.in = input(t.cmd.Rules())
		s.tools = append(s.tools, t)
		s.byName[t.name] = t
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: opts.Name, Version: opts.Version}, &sdk.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       slog.New(quietHandler{opts.Logger.Handler()}),
		// Tools only: no logging capability, and the tool list never changes.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		SetCacheable: privateCache,
	})
	for _, t := range s.tools {
		annotations := &sdk.ToolAnnotations{ReadOnlyHint: t.readOnly, OpenWorldHint: new(false)}
		if !t.readOnly {
			annotations.DestructiveHint = new(false) // the ledger only grows
		}
		s.sdk.AddTool(&sdk.Tool{
			Name:         t.name,
			Title:        t.title,
			Description:  t.description,
			InputSchema:  t.in,
			OutputSchema: envelopeSchema(t.out),
			Annotations:  annotations,
		}, s.handle)
	}
	// The SDK answers a call to an unknown tool with a JSON-RPC error before
	// any handler runs. Every tools/call goes to handle here instead, so that
	// known and unknown tools take one path and every call is audited.
	s.sdk.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if call, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && call.Params != nil {
				return s.handle(ctx, call)
			}
			if method == "tools/list" {
				return listTools(ctx, method, req, next)
			}
			if refused, err := s.lifecycle(method, req); refused {
				return nil, err
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// lifecycle answers, in the SDK's place, a client's initialize sent again
// in a session already initialized (-32600, as the SDK answers it) and
// an initialized notification sent before initialize (ignored, as the SDK
// ignores it): the SDK logs each at ERROR, and a client's mistake is no
// failure of the server's, which an operator's alert on ERROR would be
// woken for. Logged at Debug, nothing of the request quoted. (Two
// initializes racing in one session may still reach the SDK both.)
func (s *Server) lifecycle(method string, req sdk.Request) (refused bool, err error) {
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok {
		return false, nil
	}
	switch init := ss.InitializeParams() != nil; {
	case method == "initialize" && init:
		s.log.Debug("a client sent initialize again in its session; refused")
		return true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: `duplicate "initialize" received: this session is initialized already`}
	case method == "notifications/initialized" && !init:
		s.log.Debug("a client sent notifications/initialized before initialize; ignored")
		return true, nil
	}
	return false, nil
}

// allTools is every tool, in the contract's order.
func allTools() []*tool {
	return slices.Concat(taskTools(), thoughtTools(), sessionTools(), skillTools(), systemTools(),
		findingTools(), learningTools(), memoryTools(), knowledgeTools())
}

// ToolNames lists the tools' names, in the contract's order.
func ToolNames() []string {
	var names []string
	for _, t := range allTools() {
		names = append(names, t.name)
	}
	return names
}

// Tools describes the tools, in the contract's order.
func (s *Server) Tools() []ToolSpec {
	specs := make([]ToolSpec, 0, len(s.tools))
	for _, t := range s.tools {
		in, err := t.in.MarshalJSON()
		if err != nil {
			panic(fmt.Sprintf("tool %s: input schema: %v", t.name, err)) // static data
		}
		out, err := envelopeSchema(t.out).MarshalJSON()
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", t.name, err))
		}
		specs = append(specs, ToolSpec{t.name, t.title, t.description, t.readOnly, in, out})
	}
	return specs
}

// Stages names, in order, the steps every tool call goes through: recover (a
// panic becomes ERR_INTERNAL), validate (commands.Service.Do parses the
// arguments once and checks them with the domain's rules, from which the
// input schemas are generated), audit+commit (the call's events and its
// tool.called event, with the hash of the reply Encode made, in one
// durable commit).
func (s *Server) Stages() []string { return append([]string(nil), stages...) }

// privateCache marks every cacheable result (tools/list) private, not the
// protocol's default public: what a list holds depends on the caller (a
// token's tools), so no cache may hand one caller's to another.
func privateCache(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" }

// Run serves one MCP session over newline-delimited JSON-RPC on in and out.
// It returns nil when in ends or ctx is cancelled, in both cases only after
// every call already read has been answered; calls read after that are not
// taken. It returns an error if writing out fails (it then stops taking
// requests) or reading in fails other than by ending. Run does not close in or out; a goroutine blocked reading in
// may outlive it until in returns.
func (s *Server) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return serveStdio(ctx, s.sdk, in, out, s.maxLine, s.log, &direct{ctx: context.WithoutCancel(ctx), reply: s.reply})
}

// serveStdio is Run for any SDK server (the bridge's too, without d).
func serveStdio(ctx context.Context, srv *sdk.Server, in io.Reader, out io.Writer, maxLine int, log *slog.Logger, d *direct) error {
	c := newConn(in, out, maxLine, log)
	c.direct = d
	defer c.Close()
	if d != nil {
		d.ready = make(chan struct{})
		d.idle = make(chan func())
	}
	// The SDK's context would cancel in-flight calls abruptly; the connection
	// turns ctx's cancellation into a drain instead.
	session, err := srv.Connect(context.WithoutCancel(ctx), transport{c}, nil)
	if d != nil {
		d.session.Store(session) // nil when Connect failed: the SDK answers
		close(d.ready)
	}
	if err != nil {
		return fmt.Errorf("mcp connect: %w", err)
	}
	defer context.AfterFunc(ctx, c.stopReading)()
	if err := session.Wait(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mcp session: %w", err)
	}
	if err := c.failed(); err != nil {
		return fmt.Errorf("mcp session: %w", err)
	}
	return nil
}

// handle runs one tools/call through the stages. It always returns a result,
// never a protocol error: the answer to a call is an envelope.
func (s *Server) handle(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return toolResult(s.reply(ctx, req)), nil
}

// reply runs one tools/call through the stages and returns its envelope's
// bytes (handle's result carries them).
func (s *Server) reply(ctx context.Context, req *sdk.CallToolRequest) (reply []byte) {
	defer func() { // stage recover
		if p := recover(); p != nil {
			s.log.Error("tool call panicked", "tool", domain.Clip(req.Params.Name), "panic", p, "stack", string(debug.Stack()))
			_, reply = internalReply()
		}
	}()
	call := s.Call(req.Params.Name, req.Params.Arguments, clientName(req))
	s.authorize(req, &call)
	// A call that reached the server is recorded even if the client stops
	// waiting for it.
	return s.Reply(s.do(context.WithoutCancel(ctx), call))
}

// Reply is the reply to a call that commands.Service.Do answered with
// reply and err: reply, or err encoded (nothing of the call was recorded,
// or, for a *commands.StorageError that says so, its outcome is unknown).
func (s *Server) Reply(reply []byte, err error) []byte {
	if err == nil && len(reply) == 0 {
		err = errors.New("commands.Service.Do returned no reply")
	}
	if err != nil {
		_, reply = s.Encode(nil, err)
	}
	return reply
}

// Call is the call of the tool named name with args (absent or null: {})
// by the client named client, as this edge hands it to commands: with
// its command (an unknown tool's call is invalid) and Encode.
func (s *Server) Call(name string, args json.RawMessage, client string) commands.Call {
	if isAbsent(args) {
		args = json.RawMessage("{}")
	}
	call := commands.Call{Name: name, Command: s.command(name), Args: args, Client: client, Encode: s.Encode}
	if call.Command == nil {
		call.Invalid = commands.Invalid("name", "unknown tool %q", domain.Clip(call.Name))
	}
	return call
}

// command is what the tool named name runs, or nil for an unknown tool.
func (s *Server) command(name string) *commands.Command {
	if t := s.byName[name]; t != nil {
		return t.cmd
	}
	return nil
}

// isAbsent reports whether raw arguments count as not given: empty or null.
func isAbsent(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) == 0 || string(b) == "null"
}

// clientName is the client's clientInfo.name (from initialize, or from the
// request's own _meta in the sessionless protocol) as an identity fit to be
// written into every event: control and format characters and invalid UTF-8 dropped,
// at most maxClientName characters.
func clientName(req *sdk.CallToolRequest) string {
	// A request of the sessionless revision carries it in _meta, decoded
	// as a plain map: read it there rather than have the SDK re-encode and
	// decode it (a 32 KiB buffer per call).
	if m, ok := req.Params.Meta[sdk.MetaKeyClientInfo].(map[string]any); ok {
		if name, ok := m["name"].(string); ok {
			return sanitizeName(name)
		}
	}
	if info := req.ClientInfo(); info != nil {
		return sanitizeName(info.Name)
	}
	return ""
}

// plainName reports whether sanitizeName leaves name as it is: printable
// ASCII, at most maxClientName characters, no space at either end.
func plainName(name string) bool {
	if len(name) > maxClientName || name == "" || name[0] == ' ' || name[len(name)-1] == ' ' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return false
		}
	}
	return true
}

// maxClientName matches the longest --agent name.
const maxClientName = 128

func sanitizeName(name string) string {
	if plainName(name) {
		return name // the usual name, unchanged: no copy
	}
	return cleanName(name)
}

// cleanName is sanitizeName's rule, for any name.
func cleanName(name string) string {
	var b strings.Builder
	n := 0
	for _, r := range name {
		if n == maxClientName {
			break
		}
		if r == utf8.RuneError || commands.Unprintable(r) {
			continue
		}
		b.WriteRune(r)
		n++
	}
	// What is left of the invisible characters that have a place only
	// beside others (joiners, variation selectors, tags) where they join
	// or select nothing: "ali\u200dce" would look like "alice".
	s := b.String()
	for {
		i, n := commands.Stray(s)
		if i < 0 {
			break
		}
		s = s[:i] + s[i+n:]
	}
	if !commands.Visible(s) {
		return "" // nothing that shows: no name
	}
	return strings.TrimSpace(s)
}
