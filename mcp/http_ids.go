package mcp

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"unicode/utf8"
)

// Over HTTP, as over stdio (ids.go), a request's id is answered as the
// client wrote it. The SDK reads an id through a float64 and writes it back
// from its value: 1.5 was answered as 1, 9007199254740993 as
// 9007199254740992, 123456789012345678901234567890 as
// -9223372036854775808, 1e400 refused in plain text, "\u0031" answered as
// "1"; and 1 and 1.5 were one id to it, so a batch holding both was
// refused as sharing one. A request whose id the SDK would not write back
// byte for byte (sdkKeeps) is handed to it under an id of the handler's
// own, which no client can guess, and its answer written with the client's
// bytes in its place (idKeeper.exact).

// idKeeper hands out the ids the SDK sees in place of ids it would not
// keep.
type idKeeper struct {
	prefix string // random, per handler
	n      atomic.Int64
}

func newIDKeeper() *idKeeper {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return &idKeeper{prefix: "logbook-" + hex.EncodeToString(b) + "-"}
}

// exact returns w, r and body as they are if body is not one request or
// the SDK keeps its id; else body with the id replaced by one of the
// keeper's, r carrying it, and w putting the client's id back wherever the
// answer holds the keeper's (the response's id, and the subscription id
// of subscriptions/listen's stream, which is the request's).
func (k *idKeeper) exact(w http.ResponseWriter, r *http.Request, body []byte) (http.ResponseWriter, *http.Request, []byte) {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return w, r, body
	}
	start, end, isRequest, refusal := requestIDSpan(b)
	if !isRequest || refusal != "" {
		return w, r, body
	}
	id := validID(b[start:end])
	if sdkKeeps(id) {
		return w, r, body
	}
	ours := strconv.AppendQuote(nil, k.prefix+strconv.FormatInt(k.n.Add(1), 10))
	body = replaceSpan(b, start, end, ours)
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return &idWriter{ResponseWriter: w, ours: ours, id: id}, r, body
}

// sdkKeeps reports whether the SDK writes id (a valid id's bytes) back as
// it is: an integer within ±2^53 written plainly, or a string that
// encoding/json writes back the same (no escape, nothing it escapes).
func sdkKeeps(id json.RawMessage) bool {
	if id[0] == '"' {
		if !bytes.ContainsAny(id, `\<>&`) && utf8.Valid(id) && !bytes.Contains(id, []byte("\u2028")) && !bytes.Contains(id, []byte("\u2029")) {
			return true
		}
		var s string
		if json.Unmarshal(id, &s) != nil {
			return false
		}
		again, err := json.Marshal(s)
		return err == nil && bytes.Equal(again, id)
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && -1<<53 <= n && n <= 1<<53 && strconv.FormatInt(n, 10) == string(id)
}

// idWriter writes an answer with the keeper's id (ours, quoted) replaced
// by the client's. The SDK writes a JSON answer, and each event of a
// stream, in one write.
type idWriter struct {
	http.ResponseWriter
	ours, id []byte
}

func (w *idWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(bytes.ReplaceAll(p, w.ours, w.id)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *idWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// callID is the id of msg (a message's bytes) as the client wrote it, if
// msg is one request and its id one a request may carry; nil otherwise.
func callID(msg []byte) json.RawMessage {
	b := bytes.TrimSpace(msg)
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	start, end, isRequest, refusal := requestIDSpan(b)
	if !isRequest || refusal != "" {
		return nil
	}
	return validID(b[start:end])
}
