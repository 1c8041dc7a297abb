package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// logCount is a slog handler that counts the records logged per message.
type logCount struct {
	mu sync.Mutex
	n  map[string]int
}

func newLogCount() *logCount { return &logCount{n: map[string]int{}} }

func (c *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCount) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCount) WithGroup(string) slog.Handler            { return c }
func (c *logCount) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Message]++
	return nil
}

// refolds is how many refolds of missing projections c has seen begin.
func (c *logCount) refolds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n["the ledger file holds no projections (a rebuild that did not finish dropped them): folding them again from the log"]
}

// dropProjections does what the first transaction of a rebuild's swap
// does: a rebuild cut off after it leaves the file with no projections.
func dropProjections(t *testing.T, l *boltstore.Store) {
	t.Helper()
	if err := l.Update(func(tx *boltstore.Tx) error { return tx.DropSpaces() }); err != nil {
		t.Fatal(err)
	}
}

func projectionVersion(t *testing.T, l *boltstore.Store) uint64 {
	t.Helper()
	var v uint64
	if err := l.View(func(tx *boltstore.Tx) (err error) {
		v, _, err = projections.State(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRefoldMissingProjections: a running Service whose file a cut-off
// rebuild left with no projections folds them again from the log, once,
// and answers its calls — writes, and reads, answered from a read
// transaction (a held file) or in the commit — as if they had never gone;
// the projections are then those a rebuild makes.
func TestRefoldMissingProjections(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(fmt.Sprintf("hold=%v", hold), func(t *testing.T) {
			logs := newLogCount()
			h := newHarnessWith(t, Options{Logger: slog.New(logs)}, boltstore.Options{Hold: hold})
			scenario(t, h, 5, 40)
			id := h.call("task_create", map[string]any{"title": "before the cut", "project": "refold"}, "OK")["task_id"]

			dropProjections(t, h.l)
			if d := h.call("task_get", map[string]any{"task_id": id}, "OK"); d["title"] != "before the cut" {
				t.Errorf("task_get(%s) after the cut = %v", id, d)
			}
			h.call("task_create", map[string]any{"title": "after the cut", "project": "refold"}, "OK")
			if n := logs.refolds(); n != 1 {
				t.Errorf("%d refolds, want 1", n)
			}

			dropProjections(t, h.l)
			h.call("task_create", map[string]any{"title": "after the second cut", "project": "refold"}, "OK")
			if d := h.call("task_get", map[string]any{"task_id": id}, "OK"); d["title"] != "before the cut" {
				t.Errorf("task_get(%s) after the second cut = %v", id, d)
			}
			if n := logs.refolds(); n != 2 {
				t.Errorf("%d refolds after the second cut, want 2", n)
			}
			if v := projectionVersion(t, h.l); v != projections.Version {
				t.Errorf("projection version %d, want %d", v, projections.Version)
			}
			// The harness's end checks the projections against a rebuild's.
		})
	}
}

// TestRefoldMissingProjectionsOnce: calls made at once, by the process and
// by a guest it runs calls for (the relay's hub), on a file a cut-off
// rebuild left with no projections all succeed, after one refold.
func TestRefoldMissingProjectionsOnce(t *testing.T) {
	logs := newLogCount()
	h := newHarnessWith(t, Options{Logger: slog.New(logs)}, boltstore.Options{Hold: true})
	scenario(t, h, 7, 30)
	guest := h.svc.NewGuest(GuestOptions{Agent: "guest"})
	h.tampered = true // the calls below are not in h.sent; checked here instead
	dropProjections(t, h.l)

	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool, args := "task_create", fmt.Sprintf(`{"title":"call %d","project":"refold"}`, i)
			if i%2 == 1 {
				tool, args = "task_list", `{"project":"alpha"}`
			}
			call := Call{Name: tool, Command: named(tool), Args: []byte(args), Client: "c", Encode: testEncode}
			var reply []byte
			var err error
			if i%4 < 2 {
				reply, err = h.svc.Do(t.Context(), call)
			} else {
				reply, _, err = guest.DoGuest(t.Context(), call, false)
			}
			if err == nil && !strings.HasPrefix(string(reply), `{"data":`) {
				err = fmt.Errorf("reply %s", reply)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := logs.refolds(); got != 1 {
		t.Errorf("%d refolds, want 1", got)
	}
	if _, err := h.l.Verify(t.Context(), boltstore.VerifyOptions{}); err != nil {
		t.Errorf("verify: %v", err)
	}
	h.checkRebuild()
}

// TestOtherVersionNotRefolded: projections another binary's version
// rebuilt while this one ran are left as they are: the call is refused
// (ERR_STORAGE, saying to restart), or two binaries would rebuild them in
// turn.
func TestOtherVersionNotRefolded(t *testing.T) {
	logs := newLogCount()
	h := newHarness(t, Options{Logger: slog.New(logs)})
	h.call("task_create", map[string]any{"title": "t", "project": "refold"}, "OK")
	setMeta(t, h.l, "version", projections.Version-1)
	for _, tool := range []string{"task_create", "task_list"} {
		_, err := h.svc.Do(t.Context(), Call{Name: tool, Command: named(tool), Args: []byte(`{"title":"t","project":"refold"}`), Encode: testEncode})
		var se *StorageError
		if !errors.As(err, &se) || !strings.Contains(se.Reason, "another logbook version") {
			t.Errorf("%s on another version's projections: %v, want ERR_STORAGE naming it", tool, err)
		}
	}
	if v := projectionVersion(t, h.l); v != projections.Version-1 {
		t.Errorf("projection version %d, want %d as it was", v, projections.Version-1)
	}
	if n := logs.refolds(); n != 0 {
		t.Errorf("%d refolds, want none", n)
	}
	setMeta(t, h.l, "version", projections.Version)
}

// TestRefoldFails: when the projections cannot be folded again (here an
// event of the log no longer decodes), the call is answered ERR_STORAGE
// saying so, and nothing is written.
func TestRefoldFails(t *testing.T) {
	logs := newLogCount()
	h := newHarnessWith(t, Options{Logger: slog.New(logs)}, boltstore.Options{})
	h.call("task_create", map[string]any{"title": "t", "project": "refold"}, "OK")
	h.tamper(1, func([]byte) []byte { return []byte("not an event") })
	dropProjections(t, h.l)
	head := h.head()
	_, err := h.svc.Do(t.Context(), Call{Name: "task_create", Command: named("task_create"), Args: []byte(`{"title":"t","project":"refold"}`), Encode: testEncode})
	var se *StorageError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "could not fold them again") {
		t.Errorf("a call when the projections cannot be folded again: %v, want ERR_STORAGE saying so", err)
	}
	if h.head() != head {
		t.Errorf("head %d after the failed call, want %d", h.head(), head)
	}
	// The next calls are refused at once, not each with a refold of its
	// own of the whole log.
	for range 3 {
		_, err = h.svc.Do(t.Context(), Call{Name: "task_get", Command: named("task_get"), Args: []byte(`{"task_id":"T-0001"}`), Encode: testEncode})
		if !errors.As(err, &se) || !strings.Contains(se.Reason, "could not fold them again") {
			t.Errorf("a call after the refold failed: %v, want ERR_STORAGE saying so", err)
		}
	}
	if n := logs.refolds(); n != 1 {
		t.Errorf("%d refolds, want 1 (a failed one is not tried again at once)", n)
	}
}

// onLog is a slog handler that counts the records logged (logCount) and
// runs fn, on the logging goroutine, for each record with message msg.
type onLog struct {
	*logCount
	msg string
	fn  func()
}

func (o *onLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == o.msg {
		o.fn()
	}
	return o.logCount.Handle(ctx, r)
}
func (o *onLog) WithAttrs([]slog.Attr) slog.Handler { return o }
func (o *onLog) WithGroup(string) slog.Handler      { return o }

// TestRefoldDroppedAgain: another rebuild cut off after this process
// folded the projections again, but before it ran the call again, dropped
// them once more: the call folds them again once more and is answered,
// not refused saying that they could not be folded again (they were).
func TestRefoldDroppedAgain(t *testing.T) {
	var l *boltstore.Store
	drops := 1
	logs := &onLog{logCount: newLogCount(), msg: "projections folded again", fn: func() {
		if drops > 0 {
			drops--
			dropProjections(t, l)
		}
	}}
	h := newHarnessWith(t, Options{Logger: slog.New(logs)}, boltstore.Options{})
	l = h.l
	id := h.call("task_create", map[string]any{"title": "before the cuts", "project": "refold"}, "OK")["task_id"]
	dropProjections(t, h.l)
	h.call("task_create", map[string]any{"title": "after the cuts", "project": "refold"}, "OK")
	if d := h.call("task_get", map[string]any{"task_id": id}, "OK"); d["title"] != "before the cuts" {
		t.Errorf("task_get(%s) after the cuts = %v", id, d)
	}
	if n := logs.refolds(); n != 2 {
		t.Errorf("%d refolds, want 2", n)
	}
}

// TestRefoldLocked: a refold that found the file held by another process
// longer than the lock timeout failed for that alone, not for the log: the
// call is refused saying the file is locked, and the next call, once the
// file is free, folds the projections again and is answered, rather than
// refused for refoldRetryAfter as after a log that does not fold.
func TestRefoldLocked(t *testing.T) {
	var path string
	var take atomic.Bool // the next refold finds the file taken
	release := make(chan struct{})
	var held sync.WaitGroup
	logs := &onLog{logCount: newLogCount(), msg: "the ledger file holds no projections (a rebuild that did not finish dropped them): folding them again from the log"}
	logs.fn = func() {
		if !take.CompareAndSwap(true, false) {
			return
		}
		// Another process takes the file as the refold begins, and keeps it
		// past the lock timeout.
		other, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		taken := make(chan struct{})
		held.Add(1)
		go func() {
			defer held.Done()
			other.Update(func(*boltstore.Tx) error { close(taken); <-release; return nil })
			other.Close()
		}()
		<-taken
	}
	h := newHarnessWith(t, Options{Logger: slog.New(logs)}, boltstore.Options{LockTimeout: 200 * time.Millisecond})
	path = h.path
	id := h.call("task_create", map[string]any{"title": "before the cut", "project": "refold"}, "OK")["task_id"].(string)
	dropProjections(t, h.l)
	head := h.head()
	take.Store(true)
	_, err := h.svc.Do(t.Context(), Call{Name: "task_get", Command: named("task_get"), Args: []byte(`{"task_id":"` + id + `"}`), Encode: testEncode})
	var se *StorageError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "locked by another process") {
		t.Errorf("a call whose refold found the file locked: %v, want ERR_STORAGE saying it is locked", err)
	}
	close(release)
	held.Wait()
	if h.head() != head {
		t.Errorf("head %d after the refused call, want %d", h.head(), head)
	}
	if d := h.call("task_get", map[string]any{"task_id": id}, "OK"); d["title"] != "before the cut" {
		t.Errorf("task_get(%s) once the file is free = %v", id, d)
	}
	if n := logs.refolds(); n != 2 {
		t.Errorf("%d refolds, want 2", n)
	}
}
