package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// The benchmarks run the binary on a ledger of benchEvents events shaped
// like agents' work (one domain event and one tool.called per call), and
// report what the binary itself measured (events/s) and its peak resident
// memory (the child's ru_maxrss, which counts the mapped file pages it
// touched). Run them with `make bench`, or:
//
//	go test ./cmd/logbook -run '^$' -bench . -benchtime 1x
//
// The ledger is built once and kept in the system temp directory, keyed by
// its size and shape, so repeated runs do not rebuild it.

const benchEvents = 1_000_000

// benchShape names the generator below; change it when the generator
// changes, so stale cached ledgers are not reused.
const benchShape = "calls-v1"

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchLedger returns the path of the shared benchmark ledger, building it
// (without projections) if needed.
func benchLedger(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() {
		benchPath = filepath.Join(os.TempDir(), fmt.Sprintf("logbook-bench-%d-%s-f%d-p%d.db", benchEvents, benchShape, boltstore.FormatVersion, projections.Version))
		if _, err := os.Stat(benchPath); err == nil {
			return
		}
		tmp := benchPath + ".tmp"
		os.Remove(tmp)
		start := time.Now()
		if benchErr = generateCalls(tmp, benchEvents); benchErr == nil {
			benchErr = os.Rename(tmp, benchPath)
			os.Remove(tmp + ".journal") // retired at Close: nothing to recover
		}
		b.Logf("built %s in %v", benchPath, time.Since(start))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

// generateCalls appends n events shaped like tool calls of a few agents,
// in commits of 10,000 events. It does not fold projections: rebuild does.
func generateCalls(path string, n uint64) (err error) {
	l, err := boltstore.Open(path, boltstore.Options{Create: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.Close()) }()
	g := &callGen{rng: rand.New(rand.NewPCG(1, 2)), positions: map[uint64]uint64{}}
	for done := uint64(0); done < n; {
		err := l.Update(func(tx *boltstore.Tx) error {
			for tx.Head().Seq < min(done+10_000, n) {
				if err := g.call(tx); err != nil {
					return err
				}
			}
			done = tx.Head().Seq
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// callGen makes one call's events at a time.
type callGen struct {
	rng       *rand.Rand
	tasks     uint64            // tasks created
	thoughts  uint64            // thoughts recorded
	positions map[uint64]uint64 // task number → its thoughts so far
	sessions  uint64
	open      uint64 // the open session's number, 0 if none
	openUntil uint64 // the seq after which it is finalized
	last      ledger.Hash
}

var benchAgents = []string{"claude", "codex", "gemini", "aider"}

func (g *callGen) emit(tx *boltstore.Tx, typ, actor string, subjects []string, payload any) error {
	if p, ok := payload.(events.ThoughtRecorded); ok {
		payload = p.SubjectIDs() // its ids are its subjects, as commands records it
	}
	b, err := ledger.EncodePayload(payload)
	if err != nil {
		return err
	}
	r, err := tx.Append(ledger.Event{Type: typ, Version: events.CurrentVersion(typ), Actor: actor, Subjects: subjects, Payload: b})
	g.last = r.Hash
	return err
}

func (g *callGen) call(tx *boltstore.Tx) error {
	actor := benchAgents[g.rng.IntN(len(benchAgents))]
	seq := tx.Head().Seq
	if seq == 0 {
		if err := g.emit(tx, events.TypeSkillsLoaded, actor, nil, map[string]any{"skills": []any{}}); err != nil {
			return err
		}
	}
	// A recent task: agents work on what was created lately.
	task := func() uint64 { return g.tasks - uint64(g.rng.IntN(int(min(g.tasks, 500)))) }
	var tool string
	var subjects []string
	var err error
	switch p := g.rng.IntN(100); {
	case g.tasks == 0 || p < 10:
		g.tasks++
		id := domain.FormatID(domain.TaskPrefix, g.tasks)
		tool, subjects = "task_create", []string{id}
		err = g.emit(tx, events.TypeTaskCreated, actor, subjects, events.TaskCreated{
			TaskID: id, Project: fmt.Sprintf("project-%d", g.tasks%7), Sequence: g.tasks/7 + 1,
			Title: fmt.Sprintf("Task %d: make the thing work", g.tasks), Description: "Something an agent was asked to do, in a sentence or two.",
			Priority: "normal", Labels: []string{"bench"}, Assignee: actor})
	case p < 40:
		n := task()
		id := domain.FormatID(domain.TaskPrefix, n)
		status, progress := []string{"todo", "in_progress", "review", "blocked"}[g.rng.IntN(4)], g.rng.IntN(100)
		tool, subjects = "task_update", []string{id}
		err = g.emit(tx, events.TypeTaskUpdated, actor, subjects, events.TaskUpdated{TaskID: id, Status: &status, Progress: &progress})
	case p < 85:
		n := task()
		g.thoughts++
		g.positions[n]++
		id := domain.FormatID(domain.TaskPrefix, n)
		th := domain.FormatID(domain.ThoughtPrefix, g.thoughts)
		tool, subjects = "thought_record", []string{th, id}
		err = g.emit(tx, events.TypeThoughtRecorded, actor, subjects, events.ThoughtRecorded{
			ThoughtID: th, TaskID: id, Type: "analysis", ChainPosition: g.positions[n],
			Content: "Looked at the failing test; the fix is to read in chunks rather than hold the lock.",
			Branch:  "main", CommitSHA: "abc1234", PreviousHash: ledger.DigestOf(g.last)})
	default:
		tool, subjects = "task_get", []string{domain.FormatID(domain.TaskPrefix, task())}
	}
	if err != nil {
		return err
	}
	// An audit session now and then, open for a few hundred events.
	switch {
	case g.open == 0 && g.rng.IntN(2000) == 0:
		g.sessions++
		g.open, g.openUntil = g.sessions, seq+500
		sid := domain.FormatID(domain.SessionPrefix, g.sessions)
		tid := domain.FormatID(domain.TaskPrefix, task())
		err = g.emit(tx, events.TypeSessionStarted, actor, []string{sid, tid}, events.SessionStarted{SessionID: sid, TaskID: tid, AuditorID: "auditor", Scope: "shallow"})
	case g.open != 0 && seq > g.openUntil:
		sid := domain.FormatID(domain.SessionPrefix, g.open)
		g.open = 0
		err = g.emit(tx, events.TypeSessionFinalized, actor, []string{sid}, events.SessionFinalized{SessionID: sid, MerkleRoot: ledger.EmptyRoot.String()})
	}
	if err != nil {
		return err
	}
	return g.emit(tx, projections.TypeToolCalled, actor, subjects, projections.ToolCalled{Tool: tool,
		ArgsSHA256: ledger.DigestOf(g.last), Outcome: "OK", ResultSHA256: ledger.DigestOf(g.last), DurationUS: int64(g.rng.IntN(2000)), Client: actor})
}

// measured is one run of the binary: its JSON output, peak RSS, and the
// time it took (wall clock, and CPU: user plus system).
type measured struct {
	out       map[string]any
	rssMB     float64
	stderr    string
	wall, cpu time.Duration
}

func runMeasured(b *testing.B, args ...string) measured {
	b.Helper()
	cmd := exec.Command(logbookBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("logbook %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	m := measured{rssMB: float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024, stderr: errb.String(),
		wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if err := json.Unmarshal(out.Bytes(), &m.out); err != nil {
		b.Fatalf("output: %v\n%s", err, out.String())
	}
	return m
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// ensureProjections builds the benchmark ledger's projections if a
// previous run did not.
func ensureProjections(b *testing.B, path string) {
	b.Helper()
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	var version, applied, head uint64
	l.View(func(tx *boltstore.Tx) error {
		version, applied, _ = projections.State(tx)
		head = tx.Head().Seq
		return nil
	})
	if version != projections.Version || applied != head {
		runMeasured(b, "rebuild", "--db", path, "--json")
	}
}

// BenchmarkRebuild: logbook rebuild of the whole ledger.
func BenchmarkRebuild(b *testing.B) {
	path := benchLedger(b)
	var m measured
	for b.Loop() {
		m = runMeasured(b, "rebuild", "--db", path, "--json")
	}
	b.ReportMetric(num(m.out["events"]), "events")
	b.ReportMetric(num(m.out["events_per_s"]), "events/s")
	b.ReportMetric(m.rssMB, "peak-RSS-MB")
}

// sha256sum runs sha256sum on path, the baseline of verify: the same
// bytes read and hashed by a tool that does nothing else. ok is false where
// there is no sha256sum.
func sha256sum(b *testing.B, path string) (wall, cpu time.Duration, ok bool) {
	b.Helper()
	cmd := exec.Command("sha256sum", path)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Logf("no sha256sum baseline: %v", err)
		return 0, 0, false
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), true
}

// BenchmarkVerify: logbook verify (chain, Merkle and projections); it
// reports the chain-and-Merkle part and the projection part separately,
// and its time over sha256sum's of the same file, run just before and just
// after it (wall clock and CPU: on a loaded machine the CPU ratio is the
// steadier one).
func BenchmarkVerify(b *testing.B) {
	path := benchLedger(b)
	ensureProjections(b, path)
	var m measured
	var wall, cpu, shaWall, shaCPU time.Duration // summed over the runs with a baseline
	for b.Loop() {
		b.StopTimer()
		w1, c1, ok1 := sha256sum(b, path)
		b.StartTimer()
		m = runMeasured(b, "verify", "--db", path, "--json")
		b.StopTimer()
		w2, c2, ok2 := sha256sum(b, path)
		b.StartTimer()
		if ok1 && ok2 {
			wall, cpu = wall+2*m.wall, cpu+2*m.cpu
			shaWall, shaCPU = shaWall+w1+w2, shaCPU+c1+c2
		}
	}
	if shaWall > 0 && shaCPU > 0 {
		b.ReportMetric(wall.Seconds()/shaWall.Seconds(), "x-sha256sum")
		b.ReportMetric(cpu.Seconds()/shaCPU.Seconds(), "cpu-x-sha256sum")
	}
	t, _ := m.out["timing"].(map[string]any)
	b.ReportMetric(num(m.out["size"]), "events")
	b.ReportMetric(num(t["chain_events_per_s"]), "chain-events/s")
	b.ReportMetric(num(t["projections_events_per_s"]), "projection-events/s")
	b.ReportMetric(num(m.out["size"])/(num(t["total_ms"])/1000), "events/s")
	b.ReportMetric(num(t["lock_held_ms"]), "final-lock-ms")
	b.ReportMetric(m.rssMB, "peak-RSS-MB")
}

// BenchmarkVerifyChain: logbook verify --no-projections, the chain and
// Merkle part alone (with its own peak memory).
func BenchmarkVerifyChain(b *testing.B) {
	path := benchLedger(b)
	var m measured
	for b.Loop() {
		m = runMeasured(b, "verify", "--db", path, "--json", "--no-projections")
	}
	t, _ := m.out["timing"].(map[string]any)
	b.ReportMetric(num(m.out["size"]), "events")
	b.ReportMetric(num(t["chain_events_per_s"]), "events/s")
	b.ReportMetric(m.rssMB, "peak-RSS-MB")
}

// BenchmarkSnapshot: logbook snapshot of the whole ledger; final-lock-ms is
// the longest the source file was held.
func BenchmarkSnapshot(b *testing.B) {
	path := benchLedger(b)
	ensureProjections(b, path)
	var m measured
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "snapshot.db")
		m = runMeasured(b, "snapshot", "--db", path, "--out", out, "--json")
	}
	b.ReportMetric(num(m.out["size"]), "events")
	b.ReportMetric(num(m.out["locked_ms"]), "final-lock-ms")
	b.ReportMetric(m.rssMB, "peak-RSS-MB")
}
