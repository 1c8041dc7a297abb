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
	"sync"

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
//   - every write is one whole line under a mutex; nothing else writes out.
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

	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // requests handed out, not yet answered
	changed chan struct{}       // closed and replaced whenever pending shrinks

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
		pending:  make(map[jsonrpc.ID]bool),
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
			msg := c.decode(l)
			if msg == nil {
				continue
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && !c.admit(req) {
				c.end(nil)
				continue
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
// if the SDK should not see it.
func (c *conn) decode(l line) jsonrpc.Message {
	if l.tooLong {
		c.log.Warn("inbound message too large; answered with an error", "id", string(l.id))
		c.writeError(l.id, jsonrpc.CodeInvalidRequest, "Request too large: a message may be at most "+strconv.Itoa(c.maxBytes)+" bytes")
		return nil
	}
	data := bytes.TrimSpace(l.data)
	if len(data) == 0 {
		return nil
	}
	if nestedDeeper(data, maxNesting) {
		// Answered by id where one can be found: the client is waiting on it.
		var sc idScanner
		sc.feed(data)
		c.writeError(sc.result(), jsonrpc.CodeInvalidRequest, invalidRequestMessage+": nested deeper than "+strconv.Itoa(maxNesting)+" levels")
		return nil
	}
	if !json.Valid(data) {
		c.writeError(nil, jsonrpc.CodeParseError, parseErrorMessage)
		return nil
	}
	switch data[0] {
	case '{':
	case '[':
		c.writeError(nil, jsonrpc.CodeInvalidRequest, invalidRequestMessage+": batches are not supported")
		return nil
	default:
		c.writeError(nil, jsonrpc.CodeInvalidRequest, invalidRequestMessage)
		return nil
	}
	if req, ok := decodeRequest(data); ok && useFastpath {
		return req
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		c.writeError(requestID(data), jsonrpc.CodeInvalidRequest, invalidRequestMessage)
		return nil
	}
	return msg
}

// admit records a request as handed out once fewer than maxInFlight
// requests are unanswered. It returns false, recording nothing, if the
// connection stops or closes while the request waits.
func (c *conn) admit(req *jsonrpc.Request) bool {
	for {
		c.mu.Lock()
		if _, dup := c.pending[req.ID]; dup {
			// The SDK drops a request whose id is in use (unanswered): it
			// must not disturb the accounting of the request it copies.
			c.mu.Unlock()
			return true
		}
		if len(c.pending) < maxInFlight {
			c.pending[req.ID] = true
			c.mu.Unlock()
			return true
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-c.stop:
			return false
		case <-c.closed:
			return false
		}
	}
}

func (c *conn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending[id] {
		return
	}
	delete(c.pending, id)
	close(c.changed)
	c.changed = make(chan struct{})
}

// Write implements sdk.Connection: one message, one line.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, ok := encodeResult(msg)
	if !ok || !useFastpath {
		var err error
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("encoding message: %w", err)
		}
		data = append(data, '\n')
	}
	err := c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp.ID)
	}
	return err
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
	_, err := c.out.Write(data)
	return err
}

// writeError answers a line the SDK never sees. id is a JSON string or number, or nil for null.
func (c *conn) writeError(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err := c.writeLine(append(data, '\n')); err != nil {
		c.log.Error("writing error response", "error", err)
	}
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
