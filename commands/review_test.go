package commands

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// Findings of the code review, each pinned by a test.

func TestIntegrityScoreCountsMissingEvents(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "a", "project": "p"}, "OK")
	start := h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "x"}, "OK")
	h.call("task_update", map[string]any{"task_id": "T-0001", "status": "todo"}, "OK")
	h.call("merkle_finalize", map[string]any{"session_id": "A-0001"}, "OK")
	// A format-2 file hashes the Merkle nodes of its last 16 events from
	// them, so a commit fails (ERR_STORAGE, damaged) while an event among
	// those is gone: put the deleted ones in an earlier group.
	for range 8 {
		h.call("task_create", map[string]any{"title": "later", "project": "p"}, "OK")
	}
	first := uint64(start["start_seq"].(float64))
	h.tamper(first, func([]byte) []byte { return nil })
	h.tamper(first+1, func([]byte) []byte { return nil })
	d := h.call("audit_verify_chain", map[string]any{"session_id": "A-0001"}, "OK")
	score := d["integrity_score"].(float64)
	if d["chain_valid"] != false || score < 0 || score >= 100 {
		t.Errorf("with two leaves deleted: %v", d)
	}
	if d["merkle_valid"] != false {
		t.Errorf("merkle_valid = %v with leaves deleted", d["merkle_valid"])
	}
	whole := h.call("audit_verify_chain", map[string]any{}, "OK")
	if s := whole["integrity_score"].(float64); s < 0 || s >= 100 || whole["chain_valid"] != false {
		t.Errorf("whole ledger with two events deleted: %v", whole)
	}
}

func TestIntegrityScoreBounds(t *testing.T) {
	for _, tt := range []struct {
		total, broken uint64
		want          int
	}{{0, 0, 100}, {0, 2, 0}, {10, 0, 100}, {10, 5, 50}, {1, 3, 0}} {
		if got := integrityScore(tt.total, tt.broken); got != tt.want {
			t.Errorf("integrityScore(%d, %d) = %d, want %d", tt.total, tt.broken, got, tt.want)
		}
	}
}

func TestFinalizeForTaskWithoutEventsSealsTheStartEvent(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "root", "project": "p"}, "OK")
	h.call("task_create", map[string]any{"title": "child", "project": "p", "parent_id": "T-0001"}, "OK")
	start := h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "x", "scope": "deep"}, "OK")
	fin := h.call("merkle_finalize", map[string]any{"session_id": "A-0001", "task_id": "T-0002"}, "OK")
	if fin["leaf_count"] != 1.0 || fin["first_seq"] != start["start_seq"] {
		t.Errorf("finalize for a task with no events in the window = %v, want the start event as its one leaf", fin)
	}
	d := h.call("audit_verify_chain", map[string]any{"session_id": "A-0001", "task_id": "T-0002"}, "OK")
	if d["merkle_valid"] != true || d["total_records"] != 1.0 {
		t.Errorf("verify = %v", d)
	}
}

func TestVerifyChainUnknownTaskInSession(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "a", "project": "p"}, "OK")
	h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "x"}, "OK")
	h.call("audit_verify_chain", map[string]any{"session_id": "A-0001", "task_id": "T-0099"}, "ERR_TASK_NOT_FOUND")
}

func TestSubTasksNestAtMostMaxDepth(t *testing.T) {
	if testing.Short() {
		t.Skip("creates MaxDepth tasks")
	}
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "t", "project": "p"}, "OK")
	parent := "T-0001"
	for range projections.MaxDepth {
		parent = h.call("task_create", map[string]any{"title": "t", "project": "p", "parent_id": parent}, "OK")["task_id"].(string)
	}
	before := h.head()
	h.call("task_create", map[string]any{"title": "t", "project": "p", "parent_id": parent}, "ERR_INVALID_INPUT")
	if h.head() != before+1 {
		t.Errorf("the refused create appended %d events", h.head()-before)
	}
	// A deep session over the whole chain still folds every event.
	h.call("audit_session_start", map[string]any{"task_id": "T-0001", "auditor_id": "x", "scope": "deep"}, "OK")
	h.call("task_get", map[string]any{"task_id": parent}, "OK")
}

func TestCallsStopWhenAnotherVersionRebuiltProjections(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "a", "project": "p"}, "OK")
	// Another binary, of projection version 99, rebuilt the projections.
	err := h.l.Update(func(tx *boltstore.Tx) error {
		meta, err := tx.Space("meta")
		if err != nil {
			return err
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], 99)
		return meta.Put([]byte("version"), v[:])
	})
	if err != nil {
		t.Fatal(err)
	}
	before := h.head()
	raw, _ := json.Marshal(map[string]any{"title": "b", "project": "p"})
	_, err = h.svc.Do(context.Background(), Call{Name: "task_create", Args: raw, Encode: testEncode})
	var se *StorageError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "restart") {
		t.Fatalf("Do = %v, want a StorageError asking for a restart", err)
	}
	if h.head() != before {
		t.Errorf("a call against projections of another version appended %d events", h.head()-before)
	}
	h.tampered = true // the end-of-test rebuild check does not apply to a file another version owns
}
