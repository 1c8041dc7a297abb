package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestUpdateAfterCloseReturnsErrClosed: once Close has returned, Update
// answers ErrClosed at once, every time, and writes nothing. (The committer
// is gone, so a request that still got into the queue would wait forever.)
func TestUpdateAfterCloseReturnsErrClosed(t *testing.T) {
	l := openTest(t)
	appendN(t, l, 1)
	l.Close()
	errs := make(chan error)
	go func() {
		for range 100 {
			errs <- l.Update(func(tx *Tx) error {
				_, err := tx.Append(ledger.Event{Type: "x", Payload: []byte{0xc0}})
				return err
			})
		}
	}()
	deadline := time.After(time.Minute) // a hang, not a timing assertion
	for i := range 100 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("Update %d after Close: %v, want ErrClosed", i, err)
			}
		case <-deadline:
			t.Fatalf("Update %d after Close has not returned", i)
		}
	}
	l.View(func(tx *Tx) error {
		if got := tx.Head().Seq; got != 1 {
			t.Errorf("head %d after Updates on a closed ledger, want 1", got)
		}
		return nil
	})
}

// TestCloseDuringUpdates: Close while calls are queued, committing on
// their own goroutines and in group commits: every call is answered, nil
// only if its event is in the file and ErrClosed only if it is not, in the
// shared and the held modes.
func TestCloseDuringUpdates(t *testing.T) {
	for _, hold := range []bool{false, true} {
		for round := range 20 {
			path := filepath.Join(t.TempDir(), "ledger.db")
			l, err := Open(path, Options{Create: true, Hold: hold})
			if err != nil {
				t.Fatal(err)
			}
			const callers, calls = 8, 20
			type answer struct {
				subject string
				err     error
			}
			answers := make(chan answer, callers*calls)
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range calls {
						s := fmt.Sprintf("C%d-%d", c, i)
						err := l.Update(func(tx *Tx) error {
							_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "a", Subjects: []string{s}, Payload: []byte{0x80}})
							return err
						})
						answers <- answer{s, err}
					}
				}()
			}
			time.Sleep(time.Duration(round) * 100 * time.Microsecond)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			close(answers)
			in := map[string]bool{}
			r, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.View(func(tx *Tx) error {
				return tx.Scan(1, tx.Head().Seq+1, func(rec ledger.Record) error {
					if in[rec.Subjects[0]] {
						t.Errorf("%s committed twice", rec.Subjects[0])
					}
					in[rec.Subjects[0]] = true
					return nil
				})
			}); err != nil {
				t.Fatal(err)
			}
			r.Close()
			for a := range answers {
				switch {
				case a.err == nil && !in[a.subject]:
					t.Errorf("hold %v round %d: %s answered nil, not in the file", hold, round, a.subject)
				case a.err != nil && !errors.Is(a.err, ErrClosed):
					t.Errorf("hold %v round %d: %s: %v", hold, round, a.subject, a.err)
				case a.err != nil && in[a.subject]:
					t.Errorf("hold %v round %d: %s answered %v, yet in the file", hold, round, a.subject, a.err)
				}
				delete(in, a.subject)
			}
			if len(in) > 0 {
				t.Errorf("hold %v round %d: %d events in the file that no call was answered for", hold, round, len(in))
			}
		}
	}
}
