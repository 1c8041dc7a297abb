package boltaudit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/audit/boltaudit"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// replay reads path from seq from to the head, two events a transaction.
func replay(t *testing.T, path string, from uint64) ([]uint64, error) {
	t.Helper()
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seqs []uint64
	rp := boltaudit.NewReplayer(l, from, 2)
	for rp.Next() <= tasks {
		if err := rp.ReadChunk(tasks, func(r ledger.Record) error { seqs = append(seqs, r.Seq); return nil }); err != nil {
			return seqs, err
		}
	}
	return seqs, nil
}

func TestReplay(t *testing.T) {
	path := newLedger(t)
	seqs, err := replay(t, path, 3)
	if err != nil || len(seqs) != tasks-2 || seqs[0] != 3 || seqs[len(seqs)-1] != tasks {
		t.Fatalf("replay from 3: %v, %v", seqs, err)
	}
	// Event 4's bytes edited: event 5 no longer links to it, and the link
	// into the first event read is checked too.
	editTitle(t, path, 4)
	for _, from := range []uint64{1, 5} {
		seqs, err := replay(t, path, from)
		var ie *ledger.IntegrityError
		if !errors.As(err, &ie) || ie.Problem != ledger.ProblemLink || ie.Seq != 5 {
			t.Errorf("replay from %d: %v, want a broken link at seq 5", from, err)
		}
		if len(seqs) > 0 && seqs[len(seqs)-1] >= 5 {
			t.Errorf("replay from %d handed on %v, past the broken link", from, seqs)
		}
	}
}

// TestReplayLines: Replay writes the events it selects as JSON lines, in
// order, from From to To; a filter that matches nothing writes nothing;
// with Follow it ends when ctx does.
func TestReplayLines(t *testing.T) {
	path := newLedger(t)
	l, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lines := func(ctx context.Context, o boltaudit.ReplayOptions) []boltaudit.Line {
		t.Helper()
		var b bytes.Buffer
		w := io.Writer(&b)
		if o.Follow {
			// Following ends when ctx does: once every event is written.
			var cancel func()
			ctx, cancel = context.WithCancel(ctx)
			w = writerFunc(func(p []byte) (int, error) {
				b.Write(p)
				if bytes.Count(b.Bytes(), []byte("\n")) == tasks {
					cancel()
				}
				return len(p), nil
			})
		}
		if err := boltaudit.Replay(ctx, l, w, o); err != nil {
			t.Fatal(err)
		}
		var out []boltaudit.Line
		dec := json.NewDecoder(&b)
		for dec.More() {
			var line boltaudit.Line
			if err := dec.Decode(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		return out
	}
	got := lines(context.Background(), boltaudit.ReplayOptions{From: 2, To: 5, Chunk: 2, Interval: time.Second, Filter: boltaudit.Filter{Types: []string{events.TypeTaskCreated}, Actor: "agent"}})
	if len(got) != 4 || got[0].Seq != 2 || got[3].Seq != 5 || got[1].Prev != got[0].Hash || got[0].Subjects == nil {
		t.Fatalf("replay 2..5: %+v", got)
	}
	if p, ok := got[0].Payload.(map[string]any); !ok || p["task_id"] != "T-0002" {
		t.Errorf("payload of seq 2: %#v", got[0].Payload)
	}
	if got := lines(context.Background(), boltaudit.ReplayOptions{From: 1, Chunk: 4, Interval: time.Second, Filter: boltaudit.Filter{Task: "T-9999"}}); len(got) != 0 {
		t.Errorf("a filter that matches nothing: %+v", got)
	}
	if got := lines(context.Background(), boltaudit.ReplayOptions{From: 1, Chunk: 4, Follow: true, Interval: time.Millisecond}); len(got) != tasks {
		t.Errorf("follow: %d events, want %d", len(got), tasks)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestLineDigestsAsHex: a payload's 32-byte digests (tool.called v3,
// thought.recorded v2) are written as the hex older versions stored.
func TestLineDigestsAsHex(t *testing.T) {
	sum := sha256.Sum256([]byte("reply"))
	b, err := ledger.EncodePayload(projections.ToolCalled{Tool: "task_get", ArgsSHA256: ledger.DigestOf(sum),
		Outcome: "OK", ResultSHA256: ledger.DigestOf(sum), Client: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, sum[:]) || bytes.Contains(b, []byte(hex.EncodeToString(sum[:]))) {
		t.Fatalf("payload % x: want the digest as bytes", b)
	}
	line := boltaudit.LineOf(ledger.Record{Event: ledger.Event{Type: projections.TypeToolCalled, Version: 3, Payload: b}})
	out, err := json.Marshal(line.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var got projections.ToolCalled
	if err := json.Unmarshal(out, &got); err != nil || string(got.ArgsSHA256) != hex.EncodeToString(sum[:]) ||
		got.ResultSHA256 != got.ArgsSHA256 || got.Tool != "task_get" || line.PayloadError != "" {
		t.Errorf("replay payload %s (%v): want the digests as hex", out, err)
	}
}

// TestLinePositionalPayloads: thought.recorded v2 and v3 and tool.called v3 and v4
// store the array of their fields; replay writes them as the objects of
// their names older versions stored (empty optional fields absent, a
// required empty one present, v3's ids from the subjects, codes as the
// values they stand for), digests in hex.
func TestLinePositionalPayloads(t *testing.T) {
	sum := sha256.Sum256([]byte("prev"))
	h := hex.EncodeToString(sum[:])
	for _, c := range []struct {
		typ      string
		version  uint16
		subjects []string
		payload  any
		want     string
	}{
		{events.TypeThoughtRecorded, 2, nil, &events.ThoughtRecorded{ThoughtID: "Θ-0002", TaskID: "T-0001", Type: "analysis",
			Content: "c", PreviousHash: ledger.DigestOf(sum), ChainPosition: 2, Blockers: []string{"b"}},
			`{"blockers":["b"],"chain_position":2,"content":"c","previous_hash":"` + h + `","task_id":"T-0001","thought_id":"Θ-0002","type":"analysis"}`},
		{events.TypeThoughtRecorded, 2, nil, &events.ThoughtRecorded{ThoughtID: "Θ-0001", TaskID: "T-0001", Type: "plan", Content: "c", ChainPosition: 1},
			`{"chain_position":1,"content":"c","task_id":"T-0001","thought_id":"Θ-0001","type":"plan"}`},
		// v3 leaves the ids to the subjects; replay shows them as v2 stored them.
		{events.TypeThoughtRecorded, 3, []string{"Θ-0003", "T-0001", "A-0001"}, &events.ThoughtRecorded{Type: "plan", Content: "c", ChainPosition: 3},
			`{"chain_position":3,"content":"c","session_id":"A-0001","task_id":"T-0001","thought_id":"Θ-0003","type":"plan"}`},
		{events.TypeThoughtRecorded, 3, []string{"Θ-0004", "T-0001"}, &events.ThoughtRecorded{Type: "plan", Content: "c", ChainPosition: 4},
			`{"chain_position":4,"content":"c","task_id":"T-0001","thought_id":"Θ-0004","type":"plan"}`},
		// v4 stores the tool as a code, v3's type as a code: replay shows names.
		{events.TypeToolCalled, 4, []string{"T-0001"}, &events.ToolCalled{Tool: "thought_record", Outcome: "OK", Client: "c"},
			`{"client":"c","duration_us":0,"outcome":"OK","tool":"thought_record"}`},
		{events.TypeToolCalled, 4, nil, &events.ToolCalled{Tool: "a_tool_of_later", Outcome: "OK"},
			`{"client":"","duration_us":0,"outcome":"OK","tool":"a_tool_of_later"}`},
		{events.TypeToolCalled, 3, nil, &events.ToolCalled{Tool: "task_get", ArgsSHA256: ledger.DigestOf(sum), Outcome: "OK",
			ResultSHA256: ledger.DigestOf(sum), DurationUS: 12, ClientClaim: "cc", Token: ledger.DigestOf(sum)},
			`{"args_sha256":"` + h + `","client":"","client_claim":"cc","duration_us":12,"outcome":"OK","result_sha256":"` + h + `","token_sha256":"` + h + `","tool":"task_get"}`},
	} {
		b, err := ledger.EncodePayload(c.payload)
		if err != nil {
			t.Fatal(err)
		}
		if b[0]&0xf0 != 0x90 {
			t.Errorf("%s v%d stored % x, want an array", c.typ, c.version, b)
		}
		line := boltaudit.LineOf(ledger.Record{Event: ledger.Event{Type: c.typ, Version: c.version, Subjects: c.subjects, Payload: b}})
		out, err := json.Marshal(line.Payload)
		if err != nil || string(out) != c.want || line.PayloadError != "" {
			t.Errorf("%s v%d replayed as %s (%v, %q)\nwant %s", c.typ, c.version, out, err, line.PayloadError, c.want)
		}
	}
	// An array payload of a type that has no positional version is left as is.
	b, _ := ledger.EncodePayload([]string{"x"})
	line := boltaudit.LineOf(ledger.Record{Event: ledger.Event{Type: events.TypeTaskCreated, Version: 2, Payload: b}})
	if out, _ := json.Marshal(line.Payload); string(out) != `["x"]` {
		t.Errorf("array of task.created replayed as %s", out)
	}
}
