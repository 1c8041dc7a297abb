package commands

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	bolt "go.etcd.io/bbolt"
)

// TestReadsAsideAreAudited: with the file held (a server), every read-only
// call is answered from a read transaction and recorded in a commit of its
// own; the harness checks each tool.called records the exact reply's hash,
// and the replies are those of the write path.
func TestReadsAsideAreAudited(t *testing.T) {
	held := newHarnessWith(t, Options{Agent: "reader"}, boltstore.Options{Hold: true, Now: newFakeClock().Now})
	shared := newHarnessWith(t, Options{Agent: "reader"}, boltstore.Options{Now: newFakeClock().Now})
	for _, h := range []*harness{held, shared} {
		task := h.call("task_create", map[string]any{"title": "read me", "project": "reads"}, "OK")["task_id"]
		h.call("thought_record", map[string]any{"task_id": task, "type": "plan", "content": "a plan"}, "OK")
		h.call("task_get", map[string]any{"task_id": task, "include_thought_trail": true}, "OK")
		h.call("task_list", map[string]any{"search": "read"}, "OK")
		h.call("task_get", map[string]any{"task_id": "T-0999"}, "ERR_TASK_NOT_FOUND")
		h.call("audit_verify_chain", map[string]any{}, "OK")
		h.call("thought_record_list", map[string]any{"task_id": task, "verify_chain": true}, "OK")
	}
	if !held.svc.readsAside(Call{Name: "task_get", Command: GetTask}, nil) || shared.svc.readsAside(Call{Name: "task_get", Command: GetTask}, nil) || !shared.svc.readsAside(Call{Name: "task_list", Command: ListTasks}, nil) {
		t.Error("reads aside: want every read with a held file, only heavy reads with a shared one")
	}
	// Replies with no event hash or wall-clock time in them (durations in
	// the tool.called events make the two ledgers' hashes differ).
	for _, i := range []int{2, 3, 4} {
		if string(held.sent[i].Reply) != string(shared.sent[i].Reply) {
			t.Errorf("call %d (%s): a held store answered\n%s\nthe shared one\n%s", i, held.sent[i].Tool, held.sent[i].Reply, shared.sent[i].Reply)
		}
	}
}

// TestReadAsideSeesOtherProcesses: events another process appended since
// this one last committed are folded before a read answers (the read falls
// back to the write path, which catches up first).
func TestReadAsideSeesOtherProcesses(t *testing.T) {
	h := newHarness(t, Options{Agent: "one"})
	h.call("task_create", map[string]any{"title": "mine", "project": "procs"}, "OK")
	other, err := boltstore.Open(h.path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	svc, err := New(other, Options{Agent: "two"})
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"title":"theirs","project":"procs"}`)
	reply, err := svc.Do(t.Context(), Call{Name: "task_create", Command: CreateTask, Args: args, Client: h.client, Encode: testEncode})
	if err != nil {
		t.Fatal(err)
	}
	// The other process's call, for the end-of-test check of every call.
	h.sent = append(h.sent, sent{Tool: "task_create", Args: args, Code: "OK", Reply: reply})
	got := h.call("task_list", map[string]any{"project": "procs"}, "OK")
	if n := got["total_count"]; n != float64(2) {
		t.Errorf("task_list after another process appended: total_count %v, want 2", n)
	}
}

// TestConcurrentRebuilds: servers starting at once on one new file, and
// `logbook rebuild` run twice at once, each as its own process would (a
// Store of its own on the file): all succeed, whoever promotes first, and
// the projections equal a rebuild from scratch.
func TestConcurrentRebuilds(t *testing.T) {
	h := newHarness(t, Options{Agent: "seed"})
	for i := range 30 {
		h.call("task_create", map[string]any{"title": fmt.Sprintf("task %d", i), "project": "rebuilds"}, "OK")
	}
	for _, force := range []bool{false, true} {
		if !force {
			// Projections of another version, as after an upgrade.
			if err := h.l.Update(func(tx *boltstore.Tx) error {
				meta, err := tx.Space("meta")
				if err != nil {
					return err
				}
				return meta.Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 1})
			}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				l, err := boltstore.Open(h.path, boltstore.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				defer l.Close()
				if force {
					_, err = Rebuild(l, projections.RebuildOptions{Force: true})
				} else {
					_, err = New(l, Options{Agent: "starter"})
				}
				if err != nil {
					t.Errorf("force %v: %v", force, err)
				}
			})
		}
		wg.Wait()
	}
}

// TestPaddedMerkleNodeIsStorageDamage: a stored Merkle node that is not 32
// bytes (padded) makes the calls that need it fail with ERR_STORAGE
// naming the damage, never an unaudited internal error.
func TestPaddedMerkleNodeIsStorageDamage(t *testing.T) {
	h := newHarness(t, Options{Agent: "padder"})
	// A format-3 file stores the nodes from level 4 (16 events) up, and an
	// append reads one when it completes node 4/1 (at seq 32): stop close
	// enough before that for the three calls below to get there.
	h.call("task_create", map[string]any{"title": "before", "project": "pad"}, "OK")
	for h.head() < 26 {
		h.call("task_create", map[string]any{"title": "before", "project": "pad"}, "OK")
	}
	h.tampered = true
	h.l.Close()
	db, err := bolt.Open(h.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		// Every stored node: in the merkle bucket itself (format 3), or in
		// a sub-bucket per level (formats 1 and 2).
		var pad func(b *bolt.Bucket) error
		pad = func(b *bolt.Bucket) error {
			var keys, levels [][]byte
			b.ForEach(func(k, v []byte) error {
				if v == nil {
					levels = append(levels, append([]byte(nil), k...))
				} else {
					keys = append(keys, append([]byte(nil), k...))
				}
				return nil
			})
			for _, k := range keys {
				if err := b.Put(k, append(append([]byte(nil), b.Get(k)...), 0)); err != nil {
					return err
				}
			}
			for _, level := range levels {
				if err := pad(b.Bucket(level)); err != nil {
					return err
				}
			}
			return nil
		}
		return pad(btx.Bucket([]byte("merkle")))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	h.reopen(h.opts)
	storage := 0
	for range 3 {
		_, err := h.svc.Do(t.Context(), Call{Name: "task_create", Command: CreateTask, Args: []byte(`{"title":"after","project":"pad"}`), Encode: testEncode})
		var se *StorageError
		switch {
		case errors.As(err, &se):
			storage++
			if !strings.Contains(se.Reason, "damaged") {
				t.Errorf("ERR_STORAGE does not name the damage: %q", se.Reason)
			}
		case err != nil:
			t.Errorf("a call on a ledger with padded nodes: %v", err)
		}
	}
	if storage == 0 {
		t.Error("no call noticed the padded nodes")
	}
}

// TestReadAsideWaitsForTheLockOnce: a read answered aside (its own read
// transaction) that finds the file locked by another process past the
// lock timeout answers ERR_STORAGE saying so, having waited once: it fell
// back to the write path, which waited as long again (an attack review
// measured twice --lock-timeout for six read tools).
func TestReadAsideWaitsForTheLockOnce(t *testing.T) {
	h := newHarnessWith(t, Options{}, boltstore.Options{LockTimeout: 50 * time.Millisecond})
	id := h.call("task_create", map[string]any{"title": "locked out", "project": "lock"}, "OK")["task_id"].(string)
	f, err := os.OpenFile(h.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	reads := map[string]string{
		"task_list":           `{}`,
		"task_next_actions":   `{}`,
		"thought_record_list": `{"task_id":"` + id + `"}`,
		"merkle_root":         `{}`,
		"audit_verify_chain":  `{}`,
		"knowledge_search":    `{"query":"locked"}`,
		"task_get":            `{"task_id":"` + id + `"}`,
	}
	for tool, args := range reads {
		opens := h.l.Opens()
		_, err := h.svc.Do(t.Context(), Call{Name: tool, Command: named(tool), Args: []byte(args), Encode: testEncode})
		var se *StorageError
		if !errors.As(err, &se) || !strings.Contains(se.Reason, "locked by another process") {
			t.Errorf("%s with the file locked: %v; want ERR_STORAGE saying it is locked", tool, err)
		}
		if n := h.l.Opens() - opens; n != 1 {
			t.Errorf("%s with the file locked: waited for the lock %d times, want once", tool, n)
		}
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	h.call("task_list", map[string]any{}, "OK")
}
