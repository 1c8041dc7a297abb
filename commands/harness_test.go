package commands

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/projections"
)

// harness runs tool calls against a fresh ledger and verifies the whole
// chain, and that a rebuild reproduces the live projections, at the end.
type harness struct {
	t   testing.TB
	l   *ledger.Ledger
	svc *Service
}

func newHarness(t testing.TB, opts Options) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := ledger.Open(path, ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, l: l, svc: svc}
	t.Cleanup(func() {
		if _, err := l.Verify(context.Background(), ledger.VerifyOptions{}); err != nil {
			t.Errorf("verify at end: %v", err)
		}
		live := h.fingerprint()
		if err := Rebuild(l, true, nil); err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		if rebuilt := h.fingerprint(); rebuilt != live {
			t.Errorf("rebuilt projections differ from live ones (%x != %x)", rebuilt, live)
		}
		l.Close()
	})
	return h
}

func (h *harness) fingerprint() uint64 {
	var fp uint64
	err := h.l.View(func(tx *ledger.Tx) error {
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
		code := "ERR_INTERNAL"
		for c, e := range map[string]error{"ERR_INVALID_INPUT": ErrInvalidInput, "ERR_TASK_NOT_FOUND": ErrTaskNotFound,
			"ERR_PROJECT_NOT_FOUND": ErrProjectNotFound, "ERR_SESSION_NOT_FOUND": ErrSessionNotFound,
			"ERR_INVALID_TRANSITION": ErrInvalidTransition, "ERR_TASK_CLOSED": ErrTaskClosed,
			"ERR_WRITEBACK_REQUIRED": ErrWritebackRequired, "ERR_CIRCULAR_DEPENDENCY": ErrCircularDependency,
			"ERR_ALREADY_FINALIZED": ErrAlreadyFinalized, "ERR_READ_ONLY": ErrReadOnly} {
			if errors.Is(err, e) {
				code = c
			}
		}
		b, _ := json.Marshal(map[string]any{"ok": false, "error": map[string]any{"code": code, "message": err.Error()}})
		return code, b
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "data": result})
	return "OK", b
}

// call runs a tool and returns its data, failing the test unless the
// outcome is wantCode ("OK" for success).
func (h *harness) call(tool string, args any, wantCode string) map[string]any {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	out, err := h.svc.Do(context.Background(), Call{Tool: tool, Args: raw, Client: "test-client", Encode: testEncode})
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	var r reply
	if err := json.Unmarshal(out, &r); err != nil {
		h.t.Fatal(err)
	}
	code := "OK"
	if !r.OK {
		code = r.Error.Code
	}
	if code != wantCode {
		h.t.Fatalf("%s(%s) = %s, want %s: %s", tool, raw, code, wantCode, out)
	}
	var data map[string]any
	json.Unmarshal(r.Data, &data)
	return data
}

func (h *harness) head() uint64 {
	var seq uint64
	h.l.View(func(tx *ledger.Tx) error { seq = tx.Head().Seq; return nil })
	return seq
}
