package commands

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	bolt "go.etcd.io/bbolt"
)

// harness runs tool calls against a fresh ledger and verifies the whole
// chain, that every call appended exactly one tool.called event recording
// it, and that a rebuild reproduces the live projections, at the end.
type harness struct {
	t     testing.TB
	l     *boltstore.Store
	svc   *Service
	path  string
	lopts boltstore.Options
	opts  Options

	client string                                   // Call.Client of the calls (default "test-client")
	encode func(any, error) (code string, b []byte) // Call.Encode (default testEncode)
	// sent lists the calls in order: the k-th tool.called event of the
	// ledger records the k-th of them.
	sent []sent
	// tampered skips the end-of-test checks on a ledger a test damaged on
	// purpose.
	tampered bool
}

// sent is one call as made and answered.
type sent struct {
	Tool  string
	Args  json.RawMessage
	Code  string
	Reply []byte
	Err   error // the error Encode was given (nil on success)
}

func newHarness(t testing.TB, opts Options) *harness {
	return newHarnessWith(t, opts, boltstore.Options{})
}

// newHarnessWith is newHarness with ledger options (a fixed clock, say).
func newHarnessWith(t testing.TB, opts Options, lopts boltstore.Options) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	lopts.Create = true
	l, err := boltstore.Open(path, lopts)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, l: l, svc: svc, path: path, lopts: lopts, opts: opts, client: "test-client", encode: testEncode}
	t.Cleanup(func() {
		defer h.l.Close()
		if h.tampered {
			return
		}
		if _, err := h.l.Verify(context.Background(), boltstore.VerifyOptions{}); err != nil {
			t.Errorf("verify at end: %v", err)
		}
		h.checkToolCalls()
		h.checkRebuild()
	})
	return h
}

// reopen closes the ledger and opens it again with a new Service (opts),
// as a restarted server would.
func (h *harness) reopen(opts Options) {
	h.t.Helper()
	h.l.Close()
	lopts := h.lopts
	lopts.Create = false
	l, err := boltstore.Open(h.path, lopts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.l = l
	svc, err := New(l, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.svc, h.opts = svc, opts
}

// checkToolCalls checks that the ledger holds exactly one tool.called event
// per call made, in order, recording its tool, outcome and reply hash.
func (h *harness) checkToolCalls() {
	h.t.Helper()
	calls := h.toolCalls()
	if len(calls) != len(h.sent) {
		h.t.Errorf("ledger has %d tool.called events for %d calls", len(calls), len(h.sent))
		return
	}
	for i, c := range calls {
		s := h.sent[i]
		sum := sha256.Sum256(s.Reply)
		if c.P.Tool != domain.Clip(s.Tool) || c.P.Outcome != s.Code || c.P.ResultSHA256 != ledger.DigestOf(sum) {
			h.t.Errorf("tool.called #%d (seq %d) = %+v, want tool %s outcome %s", i, c.Seq, c.P, s.Tool, s.Code)
		}
	}
}

// checkRebuild checks that a forced rebuild folds the projections the
// calls left.
func (h *harness) checkRebuild() {
	h.t.Helper()
	live := h.fingerprint()
	if _, err := Rebuild(h.l, projections.RebuildOptions{Force: true}); err != nil {
		h.t.Fatalf("rebuild: %v", err)
	}
	if rebuilt := h.fingerprint(); rebuilt != live {
		h.t.Errorf("rebuilt projections differ from live ones (%x != %x)", rebuilt, live)
	}
}

func (h *harness) fingerprint() uint64 {
	var fp uint64
	err := h.l.View(func(tx *boltstore.Tx) error {
		var err error
		fp, err = projections.Fingerprint(tx)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return fp
}

// reply is the decoded envelope the test encoder produces.
type reply struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// testEncode stands in for the MCP edge: it names the error kind.
func testEncode(result any, err error) (string, []byte) {
	if err != nil {
		code := errorCode(err)
		b, _ := json.Marshal(map[string]any{"ok": false, "error": map[string]any{"code": code, "message": err.Error()}})
		return code, b
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "data": result})
	return "OK", b
}

// errorCode is the contract's code of err, ERR_INTERNAL if it is not a
// domain error.
func errorCode(err error) string {
	for c, e := range map[string]error{"ERR_INVALID_INPUT": ErrInvalidInput, "ERR_TASK_NOT_FOUND": ErrTaskNotFound,
		"ERR_PROJECT_NOT_FOUND": ErrProjectNotFound, "ERR_SESSION_NOT_FOUND": ErrSessionNotFound,
		"ERR_INVALID_TRANSITION": ErrInvalidTransition, "ERR_TASK_CLOSED": ErrTaskClosed,
		"ERR_WRITEBACK_REQUIRED": ErrWritebackRequired, "ERR_CIRCULAR_DEPENDENCY": ErrCircularDependency,
		"ERR_ALREADY_FINALIZED": ErrAlreadyFinalized, "ERR_READ_ONLY": ErrReadOnly,
		"ERR_DUPLICATE": ErrDuplicate} {
		if errors.Is(err, e) {
			return c
		}
	}
	return "ERR_INTERNAL"
}

// outcome is one call's answer.
type outcome struct {
	Code  string
	Data  map[string]any // the decoded data of a success
	Reply []byte         // the exact reply bytes
	Err   error          // the error Encode was given
}

// do runs a tool (args: any JSON-marshalable value, or json.RawMessage as
// is) and returns its outcome, failing the test only if the commit fails.
func (h *harness) do(tool string, args any) outcome {
	h.t.Helper()
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			h.t.Fatal(err)
		}
	}
	return h.doCall(Call{Name: tool, Args: raw})
}

// named is the command whose domain rules are named name, or nil: the
// tests call commands by the contract's names.
func named(name string) *Command {
	for _, c := range Commands {
		if c.Rules().Name == name {
			return c
		}
	}
	return nil
}

// doCall runs call with the harness's client and encoder (unless set).
func (h *harness) doCall(call Call) outcome {
	h.t.Helper()
	var gotErr error
	if call.Client == "" {
		call.Client = h.client
	}
	if call.Command == nil {
		call.Command = named(call.Name)
	}
	enc := h.encode
	call.Encode = func(result any, err error) (string, []byte) {
		gotErr = err
		return enc(result, err)
	}
	out, err := h.svc.Do(context.Background(), call)
	if err != nil {
		h.t.Fatalf("%s: %v", call.Name, err)
	}
	var r reply
	if err := json.Unmarshal(out, &r); err != nil {
		h.t.Fatalf("%s: reply %q: %v", call.Name, out, err)
	}
	o := outcome{Code: "OK", Reply: out, Err: gotErr}
	if !r.OK {
		o.Code = r.Error.Code
	} else if err := json.Unmarshal(r.Data, &o.Data); err != nil {
		h.t.Fatalf("%s: data %s: %v", call.Name, r.Data, err)
	}
	h.sent = append(h.sent, sent{Tool: call.Name, Args: call.Args, Code: o.Code, Reply: out, Err: gotErr})
	return o
}

// call runs a tool and returns its data, failing the test unless the
// outcome is wantCode ("OK" for success).
func (h *harness) call(tool string, args any, wantCode string) map[string]any {
	h.t.Helper()
	o := h.do(tool, args)
	if o.Code != wantCode {
		raw, _ := json.Marshal(args)
		h.t.Fatalf("%s(%s) = %s, want %s: %s", tool, raw, o.Code, wantCode, o.Reply)
	}
	return o.Data
}

func (h *harness) head() uint64 {
	var seq uint64
	h.l.View(func(tx *boltstore.Tx) error { seq = tx.Head().Seq; return nil })
	return seq
}

// toolCall is a tool.called event, decoded.
type toolCall struct {
	ledger.Record
	P projections.ToolCalled
}

// events returns every event of the ledger, decoded (Raw copied).
func (h *harness) events() []ledger.Record {
	h.t.Helper()
	var recs []ledger.Record
	err := h.l.View(func(tx *boltstore.Tx) error {
		return tx.Scan(1, tx.Head().Seq+1, func(r ledger.Record) error {
			r.Raw = append([]byte(nil), r.Raw...)
			recs = append(recs, r)
			return nil
		})
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return recs
}

// toolCalls returns the tool.called events in ledger order.
func (h *harness) toolCalls() []toolCall {
	h.t.Helper()
	var out []toolCall
	for _, r := range h.events() {
		if r.Type != projections.TypeToolCalled {
			continue
		}
		c := toolCall{Record: r}
		if err := ledger.DecodePayload(r.Payload, &c.P); err != nil {
			h.t.Fatalf("seq %d: %v", r.Seq, err)
		}
		out = append(out, c)
	}
	return out
}

// stateFingerprint is the projections' fingerprint with the applied seq
// left out: equal values mean the same read models, whatever the number of
// events folded. (It zeroes the applied seq in a transaction it rolls back.)
func (h *harness) stateFingerprint() uint64 {
	h.t.Helper()
	var fp uint64
	errRollback := errors.New("roll back")
	err := h.l.Update(func(tx *boltstore.Tx) error {
		meta, err := tx.Space("meta")
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("applied"), make([]byte, 8)); err != nil {
			return err
		}
		if fp, err = projections.Fingerprint(tx); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		h.t.Fatal(err)
	}
	return fp
}

// fakeClock is a ledger clock that starts at a fixed instant and moves one
// second per reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 4, 8, 22, 15, 30, 123e6, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.t
	c.t = c.t.Add(time.Second)
	return now
}

// keys returns the sorted keys of an object.
func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// naiveRoot is RFC 9162's MTH by its recursive definition, independent of
// the ledger's Merkle code.
func naiveRoot(leaves []ledger.Hash) ledger.Hash {
	switch n := len(leaves); n {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return leaves[0]
	default:
		k := 1
		for k*2 < n {
			k *= 2
		}
		l, r := naiveRoot(leaves[:k]), naiveRoot(leaves[k:])
		return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
	}
}

// tamper closes the ledger, rewrites the stored bytes of event seq with
// edit straight in the bbolt file (bucket "events", key the 8-byte
// big-endian seq), and reopens it with the same options. The end-of-test
// checks are skipped from then on.
func (h *harness) tamper(seq uint64, edit func(raw []byte) []byte) {
	h.t.Helper()
	h.tampered = true
	h.l.Close()
	db, err := bolt.Open(h.path, 0o600, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		b := btx.Bucket([]byte("events"))
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], seq)
		raw := b.Get(k[:])
		if raw == nil {
			return fmt.Errorf("no event %d", seq)
		}
		v := edit(append([]byte(nil), raw...))
		if v == nil { // a nil edit deletes the event
			return b.Delete(k[:])
		}
		return b.Put(k[:], v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.reopen(h.opts)
}

// flipIn returns an edit that changes the first occurrence of old in the
// stored bytes to new (same length, so the envelope stays well-formed).
func flipIn(t testing.TB, old, new string) func([]byte) []byte {
	return func(raw []byte) []byte {
		i := bytes.Index(raw, []byte(old))
		if i < 0 || len(old) != len(new) {
			t.Fatalf("cannot replace %q by %q in the event", old, new)
		}
		copy(raw[i:], new)
		return raw
	}
}

// decodeEvent decodes r's payload as the projections read it: through its
// upcasters, with the fields its version leaves to the event's subjects
// (thought.recorded v3's ids) set from them.
func decodeEvent(r ledger.Record, v any) error {
	if err := ledger.DecodePayload(r.Payload, v); err != nil {
		return err
	}
	return events.Upcast(r.Type, r.Version, r.Subjects, v)
}
