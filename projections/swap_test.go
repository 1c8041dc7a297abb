package projections_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// cutRebuildEnv names the ledger a child process of
// TestRebuildCutBetweenSwapTxs rebuilds and dies in.
// cutAtEnv, how many transactions of the copy commit before it dies.
const cutRebuildEnv, cutAtEnv = "LOGBOOK_TEST_CUT_REBUILD", "LOGBOOK_TEST_CUT_AT"

// TestRebuildCutBetweenSwapTxs: a rebuild cut where it has dropped the old
// projections and not yet copied all the new ones in — right after the
// drop or in the middle of the copy; a transaction failing, or the process
// killed (SIGKILL) there — leaves a ledger whose log verifies, with no
// projections (no version: nothing that passes for complete), which the
// next start (commands.New, through NeedsRebuild) rebuilds into the same
// ones.
func TestRebuildCutBetweenSwapTxs(t *testing.T) {
	if path := os.Getenv(cutRebuildEnv); path != "" {
		l, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		at, _ := strconv.Atoi(os.Getenv(cutAtEnv))
		projections.SetBetweenSwapTxs(func(n int) error {
			if n == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		}, 512)
		_, err = projections.Rebuild(l, projections.RebuildOptions{Force: true})
		t.Fatalf("the rebuild was not cut: %v", err)
	}
	for _, how := range []string{"failed", "killed", "failed in the copy", "killed in the copy"} {
		t.Run(how, func(t *testing.T) {
			// Cut right after the drop, or after 3 transactions of a copy
			// of 512 bytes each.
			at := 0
			if strings.HasSuffix(how, "copy") {
				at = 3
			}
			l := openFolded(t)
			history(t, l, 120)
			live := fingerprintOf(t, l)
			path := l.Path()
			switch strings.Fields(how)[0] {
			case "failed":
				cut := errors.New("cut")
				restore := projections.SetBetweenSwapTxs(func(n int) error {
					if n == at {
						return cut
					}
					return nil
				}, 512)
				_, err := projections.Rebuild(l, projections.RebuildOptions{Force: true})
				restore()
				if !errors.Is(err, cut) {
					t.Fatalf("rebuild: %v, want the cut", err)
				}
				l.Close()
			case "killed":
				l.Close()
				cmd := exec.Command(os.Args[0], "-test.run=^TestRebuildCutBetweenSwapTxs$", "-test.count=1")
				cmd.Env = append(os.Environ(), cutRebuildEnv+"="+path, fmt.Sprintf("%s=%d", cutAtEnv, at))
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() {
					t.Fatalf("the child was not killed: %v\n%s", err, out)
				}
			}
			l, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rep, err := boltaudit.Verify(context.Background(), l, boltaudit.Options{Projections: true})
			if err != nil || !rep.OK || rep.Projections.StoredVersion != 0 || rep.Projections.Checked {
				t.Fatalf("verify after the cut: %v %+v %+v", err, rep, rep.Projections)
			}
			if err := l.View(func(tx *boltstore.Tx) error {
				if need, err := projections.NeedsRebuild(tx); err != nil || !need {
					t.Errorf("after the cut: NeedsRebuild %v, %v", need, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := commands.New(l, commands.Options{}); err != nil {
				t.Fatal(err)
			}
			if got := fingerprintOf(t, l); got != live {
				t.Errorf("rebuilt at start-up: %x, before the cut %x", got, live)
			}
			// And copied in many transactions of 512 bytes, uncut.
			restore := projections.SetBetweenSwapTxs(nil, 512)
			defer restore()
			rebuild(t, l, 0)
			if got := fingerprintOf(t, l); got != live {
				t.Errorf("rebuilt in small transactions: %x, before the cut %x", got, live)
			}
		})
	}
}

// TestRebuildLongLedgerName: the scratch file's name does not grow with the
// ledger's, so a ledger whose name is as long as a file name may be (255
// bytes) rebuilds, and nothing is left beside it.
func TestRebuildLongLedgerName(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/" + strings.Repeat("l", 252) + ".db"
	l, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Update(func(tx *boltstore.Tx) error { return projections.Reset(tx) }); err != nil {
		t.Fatal(err)
	}
	if _, err := projections.Rebuild(l, projections.RebuildOptions{Force: true}); err != nil {
		t.Fatalf("rebuild of a ledger named with 255 bytes: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("beside the ledger after the rebuild: %d entries, want only the ledger", len(entries))
	}
}

// TestRebuildFileReplaced: another ledger moved over the path while a
// rebuild reads the log (between two chunk reads, the file let go) is the
// file replaced, as a commit finds it (ErrReplaced), not damage: the
// rebuild read on at the next seq in the other ledger, found it did not
// link to the last event it read, and said the hash chain was broken (exit
// 1) of two ledgers that both verify.
func TestRebuildFileReplaced(t *testing.T) {
	l := openFolded(t)
	history(t, l, 150)
	other := openFolded(t)
	history(t, other, 300)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	moved := false
	_, err := projections.Rebuild(l, projections.RebuildOptions{Force: true, Chunk: 50, Progress: func(done, total uint64) {
		if !moved {
			moved = true
			if err := os.Rename(other.Path(), l.Path()); err != nil {
				t.Fatal(err)
			}
			// Past the quiet hold: the next chunk's read opens the path
			// again (otherwise the swap's hold finds the other file).
			time.Sleep(300 * time.Millisecond)
		}
	}})
	if !errors.Is(err, boltstore.ErrReplaced) || errors.Is(err, boltstore.ErrDamaged) {
		t.Errorf("rebuild with another ledger moved over its path: %v, want ErrReplaced (not damage)", err)
	}
	if !moved {
		t.Fatal("the rebuild reported no chunk")
	}
}
