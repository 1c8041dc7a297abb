package boltstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
)

// The crash and multi-process tests run this test binary again as the
// writers: os.Args[0] with -test.run naming a child test, which skips unless
// the environment variable below names the ledger file.
const (
	envChildLedger = "LOGBOOK_TEST_CHILD_LEDGER"
	envChildID     = "LOGBOOK_TEST_CHILD_ID"
	envChildEvents = "LOGBOOK_TEST_CHILD_EVENTS"
)

// startChild starts the test binary running the test named child against
// the ledger at path, with stdin and stdout piped to the caller. The child is
// killed when the test ends, if it still runs.
func startChild(t *testing.T, child, path string, env ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout io.Reader, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), envChildLedger+"="+path)
	cmd.Env = append(cmd.Env, env...)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	var err error
	if stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, stdin, stdout, stderr
}

// childLedger is the ledger a child test works on, or "" when the test runs
// as an ordinary test (it then skips).
func childLedger(t *testing.T) string {
	path := os.Getenv(envChildLedger)
	if path == "" {
		t.Skip("runs only as a child process of another test")
	}
	return path
}

// ack is an event a child saw committed: Update had returned nil.
type ack struct {
	Seq  uint64
	Hash ledger.Hash
}

// TestCrashChild appends until killed, in every shape the store supports:
// one event per Update, several events in one Update, and many goroutines
// whose Updates share commits. It prints "ack <seq> <hash>" for each event
// after its Update has returned nil, and never exits on its own before the
// deadline. Each line is written with one write(2) of under PIPE_BUF bytes,
// so the parent never reads half a line as whole.
func TestCrashChild(t *testing.T) {
	path := childLedger(t)
	l, err := Open(path, Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id, _ := strconv.Atoi(os.Getenv(envChildID))
	var out sync.Mutex
	report := func(recs []ledger.Record) {
		var b []byte
		for _, r := range recs {
			b = fmt.Appendf(b, "ack %d %s\n", r.Seq, r.Hash)
		}
		out.Lock()
		defer out.Unlock()
		for len(b) > 0 { // one line per write
			n := bytes.IndexByte(b, '\n') + 1
			if _, err := os.Stdout.Write(b[:n]); err != nil {
				panic(err)
			}
			b = b[n:]
		}
	}
	// appendN appends n events in one Update and returns them; the records
	// are those of the last run of fn, the one that committed.
	appendN := func(n, k int) ([]ledger.Record, error) {
		var recs []ledger.Record
		err := l.Update(func(tx *Tx) error {
			recs = recs[:0]
			for i := range n {
				r, err := tx.Append(ledger.Event{
					Type: "test.crash", Version: 1, Actor: fmt.Sprintf("A-%d", id),
					Subjects: []string{fmt.Sprintf("round-%d", id), fmt.Sprintf("k-%d-%d", k, i)},
					Payload:  bytes.Repeat([]byte{byte(k)}, 1+rand.IntN(200)),
				})
				if err != nil {
					return err
				}
				r.Raw = nil
				recs = append(recs, r)
			}
			return nil
		})
		return recs, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for k := 0; time.Now().Before(deadline); k++ {
		switch k % 3 {
		case 0: // one event per commit
			recs, err := appendN(1, k)
			if err != nil {
				t.Fatal(err)
			}
			report(recs)
		case 1: // a batch in one Update
			recs, err := appendN(2+rand.IntN(30), k)
			if err != nil {
				t.Fatal(err)
			}
			report(recs)
		case 2: // concurrent Updates sharing commits
			var wg sync.WaitGroup
			for range 2 + rand.IntN(30) {
				wg.Go(func() {
					recs, err := appendN(1+rand.IntN(3), k)
					if err != nil {
						t.Error(err)
						return
					}
					report(recs)
				})
			}
			wg.Wait()
		}
	}
}

// readAcks reads the child's ack lines until EOF. first is closed at the
// first ack. Text after the last newline is a line cut by the kill and is
// dropped.
func readAcks(r io.Reader, first chan<- struct{}) ([]ack, error) {
	var acks []ack
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				return acks, nil
			}
			return acks, err
		}
		var a ack
		var hash string
		if _, err := fmt.Sscanf(line, "ack %d %s\n", &a.Seq, &hash); err != nil {
			continue // the test framework's own output
		}
		if a.Hash, err = ledger.ParseHash(hash); err != nil {
			return acks, fmt.Errorf("ack line %q: %v", line, err)
		}
		if len(acks) == 0 {
			close(first)
		}
		acks = append(acks, a)
	}
}

// TestCrashKeepsAcknowledgedEvents kills an appending child with SIGKILL at
// random moments, over and over on the same file. After every kill the file
// opens, verifies, still holds every event the child acknowledged — same
// seq, same hash — and is consistent with the tree head verified after the
// round before (nothing committed was rewritten).
//
// SIGKILL stops the process between any two instructions, with the page
// cache intact: it tests that a commit is atomic and that the lock dies with
// its holder, not what reaches the disk on power loss.
func TestCrashKeepsAcknowledgedEvents(t *testing.T) {
	rounds := 24
	if testing.Short() {
		rounds = 5
	}
	l := openTest(t) // verifies once more at the end
	path := l.Path()
	l.Close()

	var prev VerifyReport
	var acked uint64
	for round := range rounds {
		cmd, _, stdout, stderr := startChild(t, "TestCrashChild", path, fmt.Sprintf("%s=%d", envChildID, round))
		first := make(chan struct{})
		type result struct {
			acks []ack
			err  error
		}
		done := make(chan result, 1)
		go func() {
			acks, err := readAcks(stdout, first)
			done <- result{acks, err}
		}()
		select {
		case <-first:
		case <-done:
			cmd.Wait()
			t.Fatalf("round %d: child ended before appending anything: %v\n%s", round, cmd.ProcessState, stderr)
		}
		delay := time.Duration(5+rand.IntN(76)) * time.Millisecond
		time.Sleep(delay) // the moment of the crash, not synchronisation
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		res := <-done
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child did not die of SIGKILL: %v\n%s", round, err, stderr)
		}
		if res.err != nil {
			t.Fatalf("round %d: reading acks: %v", round, res.err)
		}
		if strings.Contains(stderr.String(), "DATA RACE") {
			t.Fatalf("round %d: race in child:\n%s", round, stderr)
		}

		rep := checkAfterCrash(t, path, res.acks, prev)
		acked += uint64(len(res.acks))
		t.Logf("round %d: killed after %v with %d acked (max seq %d); log has %d events",
			round, delay, len(res.acks), res.acks[len(res.acks)-1].Seq, rep.Size)
		prev = rep
	}
	if acked == 0 {
		t.Fatal("no events acknowledged in any round")
	}
}

// checkAfterCrash opens the ledger after a kill and checks it against what
// the child acknowledged and the report of the previous round.
func checkAfterCrash(t *testing.T, path string, acks []ack, prev VerifyReport) VerifyReport {
	t.Helper()
	l, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	defer l.Close()
	rep, err := l.Verify(context.Background(), VerifyOptions{})
	if err != nil {
		t.Fatalf("verify after kill: %v", err)
	}
	var maxSeq uint64
	for _, a := range acks {
		maxSeq = max(maxSeq, a.Seq)
	}
	if rep.Size < maxSeq {
		t.Fatalf("log has %d events, but seq %d was acknowledged", rep.Size, maxSeq)
	}
	err = l.View(func(tx *Tx) error {
		for _, a := range acks {
			r, err := tx.Event(a.Seq)
			if err != nil {
				return fmt.Errorf("acknowledged seq %d: %w", a.Seq, err)
			}
			if r.Hash != a.Hash || r.Seq != a.Seq {
				return fmt.Errorf("acknowledged seq %d with hash %s; stored: seq %d, hash %s", a.Seq, a.Hash, r.Seq, r.Hash)
			}
		}
		if prev.Size == 0 {
			return nil
		}
		proof, err := tx.ConsistencyProof(prev.Size, rep.Size)
		if err != nil {
			return err
		}
		return ledger.VerifyConsistency(prev.Size, rep.Size, prev.Root, rep.Root, proof)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
