package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

type replayEvent struct {
	Seq            uint64   `json:"seq"`
	Time           string   `json:"time"`
	Type           string   `json:"type"`
	PayloadVersion int      `json:"payload_version"`
	Actor          string   `json:"actor"`
	Subjects       []string `json:"subjects"`
	Prev           string   `json:"prev"`
	Hash           string   `json:"hash"`
	Payload        any      `json:"payload"`
}

// field is a field of the decoded payload.
func (e replayEvent) field(name string) any {
	m, _ := e.Payload.(map[string]any)
	return m[name]
}

func replayLines(t testing.TB, r result) []replayEvent {
	t.Helper()
	var out []replayEvent
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if l == "" {
			continue
		}
		var e replayEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

func TestReplay(t *testing.T) {
	path := healthyLedger(t, 3)
	head := headOf(t, path)
	r := run(t, "replay", "--db", path, "--chunk", "7")
	wantExit(t, r, 0, "replay")
	all := replayLines(t, r)
	if uint64(len(all)) != head {
		t.Fatalf("%d events, head %d", len(all), head)
	}
	for i, e := range all {
		if e.Seq != uint64(i+1) || e.Type == "" || e.Actor != "agent-a" || len(e.Hash) != 64 || e.Payload == nil || e.PayloadVersion == 0 {
			t.Fatalf("event %d: %+v", i+1, e)
		}
		if i > 0 && e.Prev != all[i-1].Hash {
			t.Fatalf("event %d: prev %s, hash of %d is %s", e.Seq, e.Prev, i, all[i-1].Hash)
		}
	}
	created := all[1]
	if created.Type != "task.created" || created.field("title") != "Ship the ledger" || created.field("project_sequence") != 1.0 {
		t.Errorf("decoded payload: %+v", created)
	}

	filter := func(args ...string) []replayEvent {
		t.Helper()
		r := run(t, append([]string{"replay", "--db", path}, args...)...)
		wantExit(t, r, 0, "replay "+strings.Join(args, " "))
		return replayLines(t, r)
	}
	want := func(name string, got []replayEvent, keep func(replayEvent) bool) {
		t.Helper()
		var seqs, wantSeqs []uint64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		for _, e := range all {
			if keep(e) {
				wantSeqs = append(wantSeqs, e.Seq)
			}
		}
		if len(wantSeqs) == 0 || !slices.Equal(seqs, wantSeqs) {
			t.Errorf("%s: seqs %v, want %v", name, seqs, wantSeqs)
		}
	}
	want("--from --to", filter("--from", "5", "--to", "9"), func(e replayEvent) bool { return e.Seq >= 5 && e.Seq <= 9 })
	want("--type", filter("--type", "task.updated,thought.recorded"), func(e replayEvent) bool {
		return e.Type == "task.updated" || e.Type == "thought.recorded"
	})
	// A space after a comma is part of no type (attack5: " thought.recorded"
	// matched nothing, and the replay left every thought out, exit 0).
	want("--type with spaces", filter("--type", "task.updated, thought.recorded"), func(e replayEvent) bool {
		return e.Type == "task.updated" || e.Type == "thought.recorded"
	})
	want("--task", filter("--task", "T-0002"), func(e replayEvent) bool { return slices.Contains(e.Subjects, "T-0002") })
	want("--session", filter("--session", "A-0001"), func(e replayEvent) bool { return slices.Contains(e.Subjects, "A-0001") })
	want("--actor", filter("--actor", "agent-a", "--type", "tool.called"), func(e replayEvent) bool { return e.Type == "tool.called" })
	if got := filter("--actor", "nobody"); len(got) != 0 {
		t.Errorf("--actor nobody: %d events", len(got))
	}

	// An id of the other kind or a malformed one is refused before
	// anything is printed (attack5: each printed nothing, exit 0, as a
	// ledger without such events would; --task A-0001 printed the
	// session's events). --type takes any name: a newer binary's too.
	for _, args := range [][]string{
		{"--task", "A-0001"}, {"--task", "T-1"}, {"--task", "t-0001"},
		{"--session", "T-0001"}, {"--session", "A-0001 "},
	} {
		r := run(t, append([]string{"replay", "--db", path}, args...)...)
		wantExit(t, r, 2, "replay "+strings.Join(args, " "))
		if !strings.Contains(r.stderr, args[0]+" ") || !strings.Contains(r.stderr, "is not a") || r.stdout != "" {
			t.Errorf("replay %q: want one error naming %s and no stdout, got %s", args, args[0], r)
		}
	}

	t.Run("broken link", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, path, bad)
		flipEventByte(t, bad, 6)
		r := run(t, "replay", "--db", bad)
		wantExit(t, r, 1, "replay of a tampered ledger")
		if got := replayLines(t, r); len(got) != 6 || !strings.Contains(r.stderr, "seq 7: link broken") {
			t.Errorf("want events 1..6 then a broken link at 7: %d lines, %s", len(got), r.stderr)
		}
	})
}

// startFollow starts logbook replay --follow on path, looking every 20 ms.
func startFollow(t *testing.T, path string, args ...string) (*exec.Cmd, io.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(logbookBin, append([]string{"replay", "--db", path, "--follow", "--interval", "20ms"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, stderr
}

// TestReplayFollow: --follow prints events as they are appended, and ends
// with exit 0 on SIGINT.
func TestReplayFollow(t *testing.T) {
	path := healthyLedger(t, 0)
	head := headOf(t, path)
	cmd, out, stderr := startFollow(t, path, "--type", "task.created")
	lines := make(chan replayEvent)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e replayEvent
			json.Unmarshal(sc.Bytes(), &e)
			lines <- e
		}
	}()
	next := func() replayEvent {
		t.Helper()
		select {
		case e, ok := <-lines:
			if !ok {
				t.Fatalf("replay ended: %s", stderr.String())
			}
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no event from replay --follow")
		}
		return replayEvent{}
	}
	for range 3 { // the story's three tasks
		next()
	}
	w := newLedger(t, path, "agent-b")
	for i := range 3 {
		w.call("task_create", map[string]any{"title": "new", "project": "core"})
		e := next()
		if e.Type != "task.created" || e.Seq <= head || e.Actor != "agent-b" || e.field("task_id") != "T-000"+string(rune('4'+i)) {
			t.Fatalf("followed event: %+v", e)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("replay --follow after SIGINT: %v\n%s", err, stderr.String())
	}
}

// TestReplayFollowReplaced: replay --follow reads the file at --db anew at
// each look for events, so a file replaced there under it must still hold
// what was printed. Replaced by an older copy, it used to wait silently,
// for ever, for a seq the shorter log might never reach; replaced by
// another ledger as long, it printed nothing and said nothing. Now either
// ends it with exit 1 naming the seq; a copy as long (a restore of the
// same log) is followed on.
func TestReplayFollowReplaced(t *testing.T) {
	path := healthyLedger(t, 1)
	head := headOf(t, path)
	older := filepath.Join(t.TempDir(), "older.db")
	copyFile(t, path, older)
	w := newLedger(t, path, "agent-b")
	w.call("task_create", map[string]any{"title": "after the copy", "project": "core"})
	w.l.Close()
	same := filepath.Join(t.TempDir(), "same.db")
	copyFile(t, path, same)
	other := healthyLedger(t, 5) // another ledger, longer
	cases := []struct {
		name, with string
		code       int
		stderr     string
	}{
		{"an older copy", older, 1, fmt.Sprintf("seq %d: missing event: the ledger file now ends at seq %d", head+1, head)},
		{"another ledger", other, 1, "content changed: the ledger file no longer holds the event already read"},
		{"the same log", same, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "ledger.db")
			copyFile(t, path, db)
			want := headOf(t, db)
			cmd, out, stderr := startFollow(t, db)
			defer cmd.Process.Kill()
			sc := bufio.NewScanner(out)
			for n := uint64(0); n < want; n++ {
				if !sc.Scan() {
					t.Fatalf("replay ended after %d events: %s", n, stderr.String())
				}
			}
			// Replaced as mv does it: the name now links to another file.
			tmp := db + ".new"
			copyFile(t, c.with, tmp)
			if err := os.Rename(tmp, db); err != nil {
				t.Fatal(err)
			}
			wait := time.Minute // a hang guard: it ends at its next look, 20 ms on
			if c.code < 0 {
				wait = time.Second // to see it does not end
			}
			done := make(chan error, 1)
			go func() {
				for sc.Scan() {
				}
				done <- cmd.Wait()
			}()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if c.code < 0 || !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(stderr.String(), c.stderr) ||
					strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
					t.Fatalf("replaced by %s: %v, stderr %q; want exit %d saying %q", c.name, err, stderr.String(), c.code, c.stderr)
				}
			case <-time.After(wait):
				if c.code >= 0 {
					t.Fatalf("replaced by %s: replay --follow still running a minute later, said %q", c.name, stderr.String())
				}
				cmd.Process.Signal(syscall.SIGINT)
				if err := <-done; err != nil {
					t.Fatalf("replay --follow of the same log after SIGINT: %v\n%s", err, stderr.String())
				}
			}
		})
	}
}

// TestHugeChunk: --chunk is any positive count, and one larger than the log
// reads it in one transaction. Added to a seq it used to wrap around:
// verify --chunk 18446744073709551615 said "seq 0: missing event" (exit 1)
// of a healthy ledger, and replay --from 3 with it spun for ever on an
// empty chunk. Checked on a new file (format 3) and on the first release's
// (format 1, whose node levels verify walks in chunks too).
func TestHugeChunk(t *testing.T) {
	v1 := filepath.Join(t.TempDir(), "v1.db")
	copyFile(t, filepath.Join("..", "..", "fixtures", "ledger-v1", "ledger.db"), v1)
	for _, path := range []string{healthyLedger(t, 3), v1} {
		head := headOf(t, path)
		for _, chunk := range []string{"18446744073709551615", "18446744073709551614", "9223372036854775809", "4611686018427387905"} {
			ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout) // a bound for a spin, for four runs
			out, err := exec.CommandContext(ctx, logbookBin, "verify", "--db", path, "--chunk", chunk).CombinedOutput()
			if err != nil {
				t.Errorf("verify --chunk %s: %v\n%s", chunk, err, out)
			}
			for _, from := range []uint64{1, 3, head} {
				out, err := exec.CommandContext(ctx, logbookBin, "replay", "--db", path, "--chunk", chunk, "--from", fmt.Sprint(from)).Output()
				if n := uint64(bytes.Count(out, []byte("\n"))); err != nil || n != head-from+1 {
					t.Errorf("replay --chunk %s --from %d of %d events: %d lines, %v", chunk, from, head, n, err)
				}
			}
			cancel()
		}
	}
}

// TestReplaySafeForTerminal: replay and a --json output write a C1 control
// (U+009B is CSI to a terminal) or a bidirectional override held in the
// ledger's text as a \u escape, never as the character: thought metadata
// is free-form, and an old or forged ledger holds anything. The values read
// back are the ledger's own.
func TestReplaySafeForTerminal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	w := newLedger(t, path, "agent-a")
	// A title may hold a bidirectional override (a visible text's), which
	// show --json prints.
	id := w.call("task_create", map[string]any{"title": "t \u202eon\u202c", "project": "p"})["task_id"]
	hostile := "\u009b2J \u202eon\u202c"
	w.call("thought_record", map[string]any{"task_id": id, "type": "analysis", "content": "c", "metadata": map[string]any{"k": hostile}})
	w.l.Close()
	bad := func(r rune) bool { return (r >= 0x80 && r <= 0x9f) || r == '\u202e' || r == '\u202c' }
	r := run(t, "replay", "--db", path, "--type", "thought.recorded")
	wantExit(t, r, 0, "replay")
	if strings.ContainsFunc(r.stdout, bad) || !strings.Contains(r.stdout, `\u009b`) {
		t.Errorf("replay wrote the controls as they are: %q", r.stdout)
	}
	lines := replayLines(t, r)
	var meta map[string]string // the payload holds the metadata's JSON text
	if len(lines) != 1 {
		t.Fatalf("replay: %d thoughts", len(lines))
	}
	if s, _ := lines[0].field("metadata").(string); json.Unmarshal([]byte(s), &meta) != nil || meta["k"] != hostile {
		t.Errorf("replay's metadata reads back as %q", lines[0].field("metadata"))
	}
	r = run(t, "show", "--db", path, "--json", id.(string))
	wantExit(t, r, 0, "show --json")
	if strings.ContainsFunc(r.stdout, bad) || !strings.Contains(r.stdout, `\u202e`) {
		t.Errorf("show --json wrote the controls as they are: %q", r.stdout)
	}
}
