package boltstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// TestMultiProcessChild appends $LOGBOOK_TEST_CHILD_EVENTS events, one per
// Update, from a few goroutines, once its parent writes a byte to its stdin
// (so all children start together). ledger.Event k of child c has actor "P-c" and
// subjects ["P-c", "N-k"].
func TestMultiProcessChild(t *testing.T) {
	path := childLedger(t)
	id := os.Getenv(envChildID)
	n, err := strconv.Atoi(os.Getenv(envChildEvents))
	if err != nil {
		t.Fatal(err)
	}
	// The file lock is taken by polling, so a process can lose it to the
	// others for a while; the test is about the log, not about fairness.
	l, err := Open(path, Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
		t.Fatalf("waiting for the start: %v", err)
	}
	const workers = 4 // TestMultiProcessAppend checks the order per worker
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for w := range workers {
		wg.Go(func() {
			for k := w; k < n; k += workers {
				start := time.Now()
				err := l.Update(func(tx *Tx) error {
					_, err := tx.Append(ledger.Event{
						Type: "test.multiproc", Version: 1, Actor: "P-" + id,
						Subjects: []string{"P-" + id, fmt.Sprintf("N-%d", k)},
						Payload:  []byte{0xc0},
					})
					return err
				})
				if err != nil {
					t.Errorf("event %d: %v", k, err)
					return
				}
				mu.Lock()
				slowest = max(slowest, time.Since(start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("slowest %d\n", slowest)
}

// TestMultiProcessAppend: four processes append 1,000 events each to one
// file at the same time, each commit under the file lock. The result is one
// log of exactly 4,000 events that verifies (and whose scanned leaves give
// the verified root), holding each child's events 0..999 exactly once, each
// worker's in the order its Updates returned.
func TestMultiProcessAppend(t *testing.T) {
	procs, perProc := 4, 1000
	if testing.Short() {
		perProc = 100
	}
	l := openTest(t) // and verifies again at the end
	type child struct {
		wait   func() error
		stdin  io.WriteCloser
		stderr fmt.Stringer
	}
	children := make([]child, procs)
	slowest := make([]time.Duration, procs) // each child's longest Update
	for i := range children {
		cmd, stdin, stdout, stderr := startChild(t, "TestMultiProcessChild", l.Path(),
			fmt.Sprintf("%s=%d", envChildID, i), fmt.Sprintf("%s=%d", envChildEvents, perProc))
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var d time.Duration
				if _, err := fmt.Sscanf(sc.Text(), "slowest %d", &d); err == nil {
					slowest[i] = d
				}
			}
		}()
		wait := func() error { <-drained; return cmd.Wait() } // Wait closes stdout
		children[i] = child{wait, stdin, stderr}
	}
	for _, c := range children {
		if _, err := c.stdin.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		c.stdin.Close()
	}
	for i, c := range children {
		if err := c.wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, c.stderr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	total := uint64(procs * perProc)
	rep, err := l.Verify(context.Background(), VerifyOptions{Chunk: 512})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != total {
		t.Fatalf("log has %d events, want %d", rep.Size, total)
	}
	seen := make([][]int, procs) // seen[child][k]: times event k of child was found
	for i := range seen {
		seen[i] = make([]int, perProc)
	}
	// A worker's Updates return one after the other, so its events (k
	// modulo workers) must be in the log in that order.
	next := make([][4]int, procs)
	var switches int // adjacent events from different processes
	var last string
	var f ledger.Frontier
	err = l.View(func(tx *Tx) error {
		return tx.Scan(1, total+1, func(r ledger.Record) error {
			f.Append(r.Hash)
			var c, k int
			if len(r.Subjects) != 2 {
				return fmt.Errorf("seq %d: subjects %q", r.Seq, r.Subjects)
			}
			if _, err := fmt.Sscanf(r.Subjects[0]+" "+r.Subjects[1], "P-%d N-%d", &c, &k); err != nil || c >= procs || k >= perProc {
				return fmt.Errorf("seq %d: subjects %q", r.Seq, r.Subjects)
			}
			seen[c][k]++
			if w := k % 4; k < next[c][w] {
				return fmt.Errorf("seq %d: child %d's event %d after its event %d", r.Seq, c, k, next[c][w]-4)
			}
			next[c][k%4] = k + 4
			if last != "" && r.Actor != last {
				switches++
			}
			last = r.Actor
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Size != total || f.Root() != rep.Root {
		t.Fatalf("scanned %d events with root %s; Verify: %d, root %s", f.Size, f.Root(), total, rep.Root)
	}
	for c := range seen {
		var missing, dup []string
		for k, n := range seen[c] {
			switch {
			case n == 0:
				missing = append(missing, strconv.Itoa(k))
			case n > 1:
				dup = append(dup, strconv.Itoa(k))
			}
		}
		if len(missing) > 0 || len(dup) > 0 {
			t.Errorf("child %d: missing events [%s], duplicated [%s]", c, strings.Join(missing, " "), strings.Join(dup, " "))
		}
	}
	t.Logf("%d events from %d processes; the writer changed %d times; slowest Update per process %v",
		total, procs, switches, slowest)
}
