package projections_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// cutRebuildEnv names the ledger a child process of
// TestRebuildCutBetweenSwapTxs rebuilds and dies in.
const cutRebuildEnv = "LOGBOOK_TEST_CUT_REBUILD"

// TestRebuildCutBetweenSwapTxs: a rebuild cut where it has dropped the old
// projections and not yet copied the new ones in — its second transaction
// failing, or its process killed (SIGKILL) there — leaves a ledger whose
// log verifies, with no projections (nothing half-built), which the next
// start (commands.New, through NeedsRebuild) rebuilds into the same ones.
func TestRebuildCutBetweenSwapTxs(t *testing.T) {
	if path := os.Getenv(cutRebuildEnv); path != "" {
		l, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		projections.SetBetweenSwapTxs(func() error {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		})
		_, err = projections.Rebuild(l, projections.RebuildOptions{Force: true})
		t.Fatalf("the rebuild was not cut: %v", err)
	}
	for _, how := range []string{"failed", "killed"} {
		t.Run(how, func(t *testing.T) {
			l := openFolded(t)
			history(t, l, 120)
			live := fingerprintOf(t, l)
			path := l.Path()
			switch how {
			case "failed":
				cut := errors.New("cut")
				restore := projections.SetBetweenSwapTxs(func() error { return cut })
				_, err := projections.Rebuild(l, projections.RebuildOptions{Force: true})
				restore()
				if !errors.Is(err, cut) {
					t.Fatalf("rebuild: %v, want the cut", err)
				}
				l.Close()
			case "killed":
				l.Close()
				cmd := exec.Command(os.Args[0], "-test.run=^TestRebuildCutBetweenSwapTxs$", "-test.count=1")
				cmd.Env = append(os.Environ(), cutRebuildEnv+"="+path)
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
		})
	}
}
