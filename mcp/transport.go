package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/logbook-dev/logbook/domain"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes bounds one inbound line (one JSON-RPC message). The
// largest valid tool call is far smaller; a longer line is read through
// without being kept and answered with a JSON-RPC error, so memory stays
// bounded whatever a client sends.
const DefaultMaxMessageBytes = 4 << 20

// maxInFlight bounds the requests read but not yet answered: reading pauses
// at this many, so a client that floods the server cannot grow its memory
// without bound. No handler waits on the client, so this cannot deadlock.
const maxInFlight = 64

// maxHeldBytes bounds the bytes of the request lines in flight. The SDK,
// validation and hashing each keep their own copy of a request while it
// runs, so 64 requests of 4 MiB once held over 2 GB; past this budget
// reading pauses until replies free it (one request is always admitted,
// whatever its size).
const maxHeldBytes = 16 << 20

// maxNesting is the deepest JSON a message may have; the SDK refuses deeper
// messages anyway, and Go's JSON scanner cannot read past 10,000 levels.
const maxNesting = 1000

// JSON-RPC answers the connection writes itself, to lines the SDK never sees.
const (
	parseErrorMessage     = "Parse error"
	invalidRequestMessage = "Invalid Request"
)

// conn is the newline-delimited JSON-RPC connection under the SDK. It differs
// from the SDK's own stdio transport (which closes the session on the first
// malformed line) in that:
//
//   - a line that is not JSON is answered with a -32700 parse error (id null),
//     JSON that is not a JSON-RPC message or is a batch with -32600, and the
//     session goes on; blank lines are ignored;
//   - a line longer than the limit is read through without being kept and
//     answered with -32600 carrying the request's id when one can be found;
//   - up to maxInFlight requests, tool calls included, run at once, so calls
//     in flight share the ledger's group commits; like any JSON-RPC peer, a
//     client that needs one call to follow another waits for its reply;
//   - at end of input, or when the server is told to stop, it stops handing
//     out new messages but reports end of stream only once every request it
//     handed out has been answered, so in-flight calls complete and reply
//     (on stop, a message read but not yet handed out is dropped unanswered);
//   - request ids are kept as the client wrote them: the SDK sees a
//     session-unique id of the connection's, and the reply goes out under
//     the client's bytes (ids.go); a request reusing an id in flight gets
//     -32600 under that id; notifications/cancelled is dropped (a call that
//     reached the server runs, is recorded and answered);
//   - every write is one whole line under a mutex; nothing else writes out;
//     once a write fails (the client closed its end) no request is taken.
type conn struct {
	out      io.Writer
	log      *slog.Logger
	maxBytes int

	lines   chan line     // from the reader goroutine; unbuffered
	stop    chan struct{} // closed by stopReading
	stopped sync.Once

	// Only Read touches ended and endErr (the SDK calls Read from one goroutine).
	ended  bool
	endErr error

	writeMu  sync.Mutex
	writeErr error // the first failed write; under writeMu

	lastID int64 // the last id handed to the SDK; only Read touches it

	direct *direct // answers usual tool calls itself; nil for the bridge

	mu       sync.Mutex
	pending  map[jsonrpc.ID]held // requests handed out, not yet answered
	inFlight map[string]bool     // the client's ids of pending, byte for byte
	heldSize int                 // the bytes of pending's lines
	changed  chan struct{}       // closed and replaced whenever pending shrinks

	closeOnce sync.Once
	closed    chan struct{}
}

func newConn(in io.Reader, out io.Writer, maxBytes int, log *slog.Logger) *conn {
	c := &conn{
		out:      out,
		log:      log,
		maxBytes: maxBytes,
		lines:    make(chan line),
		stop:     make(chan struct{}),
		pending:  make(map[jsonrpc.ID]held),
		inFlight: make(map[string]bool),
		changed:  make(chan struct{}),
		closed:   make(chan struct{}),
	}
	// Reading stdin cannot be interrupted portably, so it happens in its own
	// goroutine; if in never returns, that goroutine outlives the session
	// (harmless for a process that is about to exit).
	go c.readLines(bufio.NewReaderSize(in, 64<<10), maxBytes)
	return c
}

// stopReading makes the connection hand out no new message; once every
// request handed out is answered, Read reports end of stream.
func (c *conn) stopReading() { c.stopped.Do(func() { close(c.stop) }) }

func (c *conn) readLines(r *bufio.Reader, maxBytes int) {
	for {
		l := readLine(r, maxBytes)
		if l.err != nil && (len(l.data) > 0 || l.tooLong) {
			// A last line without a newline: deliver it, then the end.
			last := l
			last.err = nil
			if !c.send(last) {
				return
			}
			l = line{err: l.err}
		}
		if !c.send(l) || l.err != nil {
			return
		}
	}
}

func (c *conn) send(l line) bool {
	select {
	case c.lines <- l:
		return true
	case <-c.closed:
		return false
	}
}

// Read implements sdk.Connection: the next JSON-RPC message from the client.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for !c.ended {
		select {
		case <-c.stop:
			c.end(nil)
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case <-c.stop:
			c.end(nil)
		case l := <-c.lines:
			if l.err != nil {
				c.end(l.err)
				continue
			}
			msg, id, fast := c.decode(l)
			if msg == nil {
				continue
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				switch c.admit(req.ID, held{id, len(l.data)}) {
				case admitStopped:
					c.end(nil)
					continue
				case admitDuplicate:
					c.writeError(id, jsonrpc.CodeInvalidRequest, invalidRequestMessage+": id "+string(id)+" is already in use by a request in flight")
					continue
				}
				if fast && c.direct.serve(c, req) {
					continue
				}
			}
			return msg, nil
		}
	}
	return c.drain()
}

// end records that no further message will be handed out, and why.
func (c *conn) end(err error) {
	c.ended = true
	if err != nil && !errors.Is(err, io.EOF) {
		c.log.Error("reading input", "error", err)
		c.endErr = fmt.Errorf("reading input: %w", err)
	}
}

// drain waits until every request handed out has been answered, then reports
// the end of the stream (io.EOF, or the read error).
func (c *conn) drain() (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n == 0 {
			if c.endErr != nil {
				return nil, c.endErr
			}
			return nil, io.EOF
		}
		select {
		case <-changed:
		case <-c.closed:
			return nil, io.EOF
		}
	}
}

// decode turns a line into a message, answering it itself and returning nil
// if the SDK should not see it. A request with an id is handed out under an
// id of the connection's (ids.go); id is then the client's. fast: the fast
// path decoded it (fastpath.go).
func (c *conn) decode(l line) (msg jsonrpc.Message, id json.RawMessage, fast bool) {
	if l.tooLong {
		c.log.Warn("inbound message too large; answered with an error", "id", string(l.id))
		c.writeError(l.id, jsonrpc.CodeInvalidRequest, "Request too large: a message may be at most "+strconv.Itoa(c.maxBytes)+" bytes")
		return nil, nil, false
	}
	// JSON's white space only, as HTTP's body is read: bytes.TrimSpace
	// also took U+00A0, U+0085 and U+2028 around a message for space, and
	// served a line HTTP refuses as not JSON.
	data := bytes.Trim(l.data, " \t\r\n")
	if len(data) == 0 {
		return nil, nil, false
	}
	if nestedDeeper(data, maxNesting) {
		// Answered by id where one can be found: the client is waiting on it.
		var sc idScanner
		sc.feed(data)
		c.writeError(sc.result(), jsonrpc.CodeInvalidRequest, invalidRequestMessage+": nested deeper than "+strconv.Itoa(maxNesting)+" levels")
		return nil, nil, false
	}
	if !json.Valid(data) {
		c.writeError(nil, jsonrpc.CodeParseError, parseErrorMessage)
		return nil, nil, false
	}
	switch data[0] {
	case '{':
	case '[':
		c.writeError(nil, jsonrpc.CodeInvalidRequest, invalidRequestMessage+": batches are not supported")
		return nil, nil, false
	default:
		c.writeError(nil, jsonrpc.CodeInvalidRequest, invalidRequestMessage)
		return nil, nil, false
	}
	if id, code, refusal := shapeAnswer(data); refusal != "" {
		c.writeError(id, code, refusal)
		return nil, nil, false
	}
	if start, end, isRequest, refusal := requestIDSpan(data); isRequest { // not a notification
		if refusal != "" {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, refusal)
			return nil, nil, false
		}
		id = validID(data[start:end])
		c.lastID++
		data = replaceSpan(data, start, end, internalID(c.lastID))
	}
	if req, ok := decodeRequest(data); ok && useFastpath {
		msg, fast = req, true
	} else if msg, _ = jsonrpc.DecodeMessage(data); msg == nil {
		if id == nil {
			id = requestID(data)
		}
		c.writeError(id, jsonrpc.CodeInvalidRequest, invalidRequestMessage)
		return nil, nil, false
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodCancelled && !req.IsCall() {
		// A call that reached the server runs to its end and is audited
		// (Server.handle); cancelling it would only lose its reply. The
		// notification is dropped: MCP lets a receiver ignore it.
		return nil, nil, false
	}
	return msg, id, fast
}

const methodCancelled = "notifications/cancelled"

// Outcomes of admit.
const (
	admitted = iota
	admitDuplicate
	admitStopped
)

// held is a request handed out: the client's id and its line's size.
type held struct {
	id   json.RawMessage
	size int
}

// admit records a request as handed out once fewer than maxInFlight
// requests are unanswered and their lines with this one fit maxHeldBytes;
// key is the id the SDK sees. A client id already in flight is refused
// (admitDuplicate): its reply would be indistinguishable from the other's.
// It returns admitStopped, recording nothing, if the connection stops or
// closes while the request waits.
func (c *conn) admit(key jsonrpc.ID, r held) int {
	for {
		c.mu.Lock()
		if c.inFlight[string(r.id)] {
			c.mu.Unlock()
			return admitDuplicate
		}
		if len(c.pending) == 0 || len(c.pending) < maxInFlight && c.heldSize+r.size <= maxHeldBytes {
			c.pending[key] = r
			c.inFlight[string(r.id)] = true
			c.heldSize += r.size
			c.mu.Unlock()
			return admitted
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-c.stop:
			return admitStopped
		case <-c.closed:
			return admitStopped
		}
	}
}

// clientID is the client's id of a request handed out under key, or nil. It
// frees that id for reuse: the client may reuse it as soon as it reads the
// reply, which is about to be written.
func (c *conn) clientID(key jsonrpc.ID) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pending[key]
	if ok {
		delete(c.inFlight, string(r.id))
	}
	return r.id
}

// answered records that the request handed out under key has been answered.
func (c *conn) answered(key jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pending[key]
	if !ok {
		return
	}
	delete(c.pending, key)
	c.heldSize -= r.size
	close(c.changed)
	c.changed = make(chan struct{})
}

// Write implements sdk.Connection: one message, one line. A response goes
// out under the client's id of its request.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	var id json.RawMessage
	if isResp {
		id = c.clientID(resp.ID)
		if resp.Error != nil {
			r := *resp
			r.Error = bounded(coded(resp.Error))
			msg = &r
		}
	}
	data, ok := encodeResult(msg, id)
	if !ok || !useFastpath {
		var err error
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("encoding message: %w", err)
		}
		if id != nil {
			data = withID(data, id)
		}
		data = append(data, '\n')
	}
	err := c.writeLine(data)
	if isResp {
		c.answered(resp.ID)
	}
	return err
}

// coded gives an error the SDK answers without a JSON-RPC code its code.
// The SDK sends such errors as code 0, which JSON-RPC does not define and
// clients do not expect: a tools/call before initialize, a second
// initialize, params it cannot unmarshal. Each is the client's request
// refused, so it is -32600 (the request) or -32602 (its params); any other
// is -32603.
func coded(err error) error {
	if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return err // coded already, perhaps wrapped: the SDK keeps the code
	}
	msg := err.Error()
	// What the SDK says of a request's params may come wrapped in
	// "handling 'METHOD': " (initialize's, whose params it reads itself).
	said := msg
	if rest, ok := strings.CutPrefix(said, "handling '"); ok {
		if _, after, ok := strings.Cut(rest, "': "); ok {
			said = after
		}
	}
	code := int64(jsonrpc.CodeInternalError)
	switch {
	case strings.Contains(said, "invalid during session initialization"), strings.HasPrefix(said, "duplicate "),
		strings.HasPrefix(said, `missing required "params"`):
		code = jsonrpc.CodeInvalidRequest
	case strings.HasPrefix(said, "unmarshaling "), strings.HasPrefix(said, "missing required"),
		strings.HasPrefix(said, "failed to decode"):
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: msg}
}

// sdkRoom is how much of an error message the SDK wrote a client gets:
// its own words (the longest, 118 characters, names the protocol versions
// it speaks) and MaxQuoted characters of what the client sent.
const sdkRoom = 2 * domain.MaxQuoted

// bounded is a JSON-RPC error as the client gets it: the SDK's messages
// quote what the client sent whole (an unknown method or prompt, a
// resource's URI), so its message is cut after sdkRoom characters
// (domain.ClipAt) and data larger than that dropped. The tools' own
// errors are results, whose issues are bounded where made.
func bounded(err error) *jsonrpc.Error {
	// As the SDK writes an error: a wrapped one's code, the whole message.
	e, ok := err.(*jsonrpc.Error)
	if !ok {
		e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		if w, ok := errors.AsType[*jsonrpc.Error](err); ok {
			e.Code = w.Code
		}
	}
	msg := domain.ClipAt(e.Message, sdkRoom)
	if msg == e.Message && len(e.Data) <= sdkRoom {
		return e
	}
	out := &jsonrpc.Error{Code: e.Code, Message: msg}
	if len(e.Data) <= sdkRoom {
		out.Data = e.Data
	}
	return out
}

// writeLine writes data, which ends in a newline.
func (c *conn) writeLine(data []byte) error {
	select {
	case <-c.closed:
		return sdk.ErrConnectionClosed
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.writeErr != nil {
		return c.writeErr
	}
	if _, err := c.out.Write(data); err != nil {
		// Nothing more can reach the client (its end of the pipe is
		// closed): stop taking requests; the session ends with the error.
		c.writeErr = fmt.Errorf("writing output: %w", err)
		c.log.Error("cannot write to the client; ending the session", "error", err)
		c.stopReading()
		return c.writeErr
	}
	return nil
}

// failed is the first write error, if any.
func (c *conn) failed() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.writeErr
}

// writeError answers a line the SDK never sees. id is a JSON string or number, or nil for null.
func (c *conn) writeError(id json.RawMessage, code int64, message string) {
	if err := c.writeLine(append(errorResponse(id, code, message), '\n')); err != nil {
		c.log.Error("writing error response", "error", err)
	}
}

// errorResponse is the JSON-RPC error response to the request of id (a
// JSON string or number, or nil for null: a message whose id is not
// known, or none).
func errorResponse(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return data
}

// Close implements sdk.Connection. It does not close in or out, which the
// caller owns.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements sdk.Connection; stdio sessions have none.
func (c *conn) SessionID() string { return "" }

// transport hands the SDK our connection.
type transport struct{ c *conn }

func (t transport) Connect(context.Context) (sdk.Connection, error) { return t.c, nil }
