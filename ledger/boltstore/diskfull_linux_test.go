package boltstore

import (
	"os"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

// The file cannot grow (RLIMIT_FSIZE at its size): a generation's pin
// keeps every page its commits freed from reuse, so its commits take new
// pages at the end of the file until none is left. The commit that finds
// none fails; the generation must then end, so that the next commit may
// reuse what the generation freed. It did not, held (a process holding the
// file keeps its generation across commits): every later commit failed as
// well, for as long as the file could not grow, however small, while a
// Store sharing the file (whose failed session ended the generation) went
// on committing.
func TestJournalFileCannotGrowFailedCommitEndsGeneration(t *testing.T) {
	for _, hold := range []bool{true, false} {
		l, path, _ := journaled(t, Options{Hold: hold})
		noCheckpoints(l)
		appendOne(t, l, 0)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		restore := limitFileSize(t, max(fi.Size(), journalSize))
		var failed error
		commits := 0
		// Held, fewer commits than a generation's: none ends meanwhile.
		most := genCommits - 4
		if !hold {
			most = 1000
		}
		for ; commits < most && failed == nil; commits++ {
			failed = appendSized(l, 8<<10)
		}
		after := l.Update(func(tx *Tx) error {
			_, err := tx.Append(ledger.Event{Type: "test.appended", Version: 1, Actor: "tester", Subjects: []string{"T-1"}, Payload: []byte{0x81, 0xa1, 'i', 1}})
			return err
		})
		restore()
		if failed == nil {
			t.Fatalf("hold %v: %d commits, none failed: the file grew past RLIMIT_FSIZE", hold, commits)
		}
		if after != nil {
			t.Errorf("hold %v: after a commit failed (%v) at the file's end, a small one failed too: %v", hold, failed, after)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got := recoverImage(t, path); len(got) != len(storedEvents(t, path, nil)) {
			t.Errorf("hold %v: recovery found %d events", hold, len(got))
		}
	}
}
