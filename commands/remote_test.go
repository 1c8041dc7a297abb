package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// loopback is a Remote that hands calls to a guest of another Service on
// the same ledger, as server's relay does across processes; lose makes it
// run a call and then lose the answer, notSent refuse to send it.
type loopback struct {
	guest         *Service
	notSent, lose bool
	sent          []Forward
}

func (r *loopback) Forward(ctx context.Context, f Forward) (Forwarded, error) {
	r.sent = append(r.sent, f)
	if r.notSent {
		return Forwarded{}, ErrNotSent
	}
	call := Call{Name: f.Name, Command: named(f.Name), Args: f.Args, Client: f.Client, Encode: testEncode}
	reply, first, err := r.guest.DoGuest(ctx, call, f.First)
	if r.lose {
		return Forwarded{}, errors.New("connection reset by peer")
	}
	if err != nil {
		_, reply = testEncode(nil, err)
	}
	return Forwarded{Reply: reply, First: first}, nil
}

// TestRemoteRecordsAsTheSender: a Service whose calls go to another one's
// guest records them with its own actor, client and options, writes its
// skills.loaded record once whichever process ran its first call, runs a
// call no one received itself, and answers a call whose answer was lost
// with an outcome-unknown StorageError rather than running it again.
func TestRemoteRecordsAsTheSender(t *testing.T) {
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "l.db"), boltstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hub, err := New(l, Options{Agent: "hub"})
	if err != nil {
		t.Fatal(err)
	}
	follower, err := New(l, Options{Agent: "follower", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &loopback{guest: hub.NewGuest(follower.Guest()), notSent: true}
	follower.SetRemote(r)
	do := func(tool, args string) ([]byte, error) {
		return follower.Do(context.Background(), Call{Name: tool, Command: named(tool), Args: json.RawMessage(args), Client: "c", Encode: testEncode})
	}
	if _, err := do("server_ping", `{}`); err != nil { // not sent: run here
		t.Fatal(err)
	}
	r.notSent = false
	if reply, err := do("task_create", `{"title":"t","project":"p"}`); err != nil || !json.Valid(reply) {
		t.Fatal(reply, err)
	}
	r.lose = true
	_, err = do("server_ping", `{}`)
	var se *StorageError
	if !errors.As(err, &se) || !se.Unknown {
		t.Fatalf("lost answer: %v, want a StorageError of unknown outcome", err)
	}
	if len(r.sent) != 3 || !r.sent[0].First || r.sent[1].First || r.sent[2].First {
		t.Errorf("sent %+v: First only on the first call", r.sent)
	}
	type rec struct{ typ, actor, tool, client, outcome string }
	var got []rec
	err = l.View(func(tx *boltstore.Tx) error {
		for seq := uint64(1); seq <= tx.Head().Seq; seq++ {
			e, err := tx.Event(seq)
			if err != nil {
				return err
			}
			x := rec{typ: e.Type, actor: e.Actor}
			if e.Type == projections.TypeToolCalled {
				var p projections.ToolCalled
				if err := ledger.DecodePayload(e.Payload, &p); err != nil {
					return err
				}
				x.tool, x.client, x.outcome = p.Tool, p.Client, p.Outcome
			}
			got = append(got, x)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []rec{
		{events.TypeSkillsLoaded, "follower", "", "", ""},
		{projections.TypeToolCalled, "follower", "server_ping", "c", "OK"},
		{projections.TypeToolCalled, "follower", "task_create", "c", "ERR_READ_ONLY"}, // the follower's --read-only
		{projections.TypeToolCalled, "follower", "server_ping", "c", "OK"},            // committed; its answer lost
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

// A commit the disk failed part way through may or may not be in the
// ledger: its StorageError says the outcome is unknown, as for a call the
// holder never answered; one refused after the failure left nothing.
func TestStorageErrorOutcome(t *testing.T) {
	h := newHarness(t, Options{})
	for _, c := range []struct {
		err     error
		unknown bool
		reason  string
	}{
		{fmt.Errorf("commit: %w: %w", boltstore.ErrOutcomeUnknown, boltstore.ErrSyncFailed), true, "the disk failed while this call was made durable"},
		{fmt.Errorf("commit: %w", boltstore.ErrSyncFailed), false, "this process commits no more; restart it"},
		{&outcomeUnknown{errors.New("hub gone")}, true, "was stopped (SIGSTOP, or ^Z in its terminal) or stopped answering"},
		{fmt.Errorf("commit: %w", boltstore.ErrLocked), false, "locked by another process"},
		{fmt.Errorf("commit: %w", boltstore.ErrHeadMoved), false, "other logbook nodes kept appending"},
		{fmt.Errorf("catch up with the replicated log: %w", &ledger.IntegrityError{Seq: 7, Problem: ledger.ProblemMalformed}), false, "integrity checks at seq 7"},
		{fmt.Errorf("commit: %w: append after seq 5 not resolved", boltstore.ErrAppendUnknown), true, "neither took nor refused this call's events"},
		{fmt.Errorf("catch up: %w: stream team was deleted", boltstore.ErrLogGone), false, "stream) no longer exists"},
		{fmt.Errorf("catch up: %w: max_msgs set", boltstore.ErrLogUnsafe), false, "settings were changed while this server ran"},
		{fmt.Errorf("catch up: %w: nats: timeout", boltstore.ErrLogUnreachable), false, "servers did not answer this node in time"},
		{fmt.Errorf("open ledger: %w: x.db is the local copy of stream s", boltstore.ErrNodeCopy), false, "nothing of this call was recorded"},
	} {
		var se *StorageError
		if err := h.svc.storageError("task_create", c.err); !errors.As(err, &se) || se.Unknown != c.unknown || !strings.Contains(se.Reason, c.reason) {
			t.Errorf("%v: %+v, want unknown %v and a reason with %q", c.err, se, c.unknown, c.reason)
		}
	}
}

// TestCheckAgent: an agent identity may be any visible name, joiners
// included (Persian and Indic names, emoji sequences need them), but no
// character that is invisible on its own or reorders what is shown.
func TestCheckAgent(t *testing.T) {
	for _, ok := range []string{"", "claude-code", "\u0645\u06cc\u200c\u0631\u0648\u062f", "\U0001F468\u200d\U0001F4BB bot", "ὀδός"} {
		if err := CheckAgent(ok); err != nil {
			t.Errorf("CheckAgent(%q): %v", ok, err)
		}
	}
	// Joiners where they join, variation selectors where they select, a
	// flag's tag sequence: Indic and Persian names, emoji.
	for _, ok := range []string{
		"\u0915\u094d\u200d\u0937",                   // Devanagari: ka, virama, ZWJ, ssa
		"\u09b0\u200d\u09cd\u09af",                   // Bengali ya-phala: ra, ZWJ, virama, ya
		"\u0d9a\u0dca\u200d\u0dc2",                   // Sinhala: ka, al-lakuna, ZWJ, ssa
		"\u0646\u0627\u0645\u0647\u200c\u0647\u0627", // Persian: ZWNJ between joining letters
		"\U0001F469\U0001F3FD\u200d\U0001F4BB",       // skin tone, then ZWJ
		"\u2764\ufe0f\u200d\U0001F525 ops",           // presentation selector, then ZWJ
		"\u845b\U000E0100\u57ce",                     // an ideographic variation sequence
		"1\ufe0f\u20e3 bot",                          // a keycap
		"\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", // Scotland's flag
	} {
		if err := CheckAgent(ok); err != nil {
			t.Errorf("CheckAgent(%+q): %v", ok, err)
		}
	}
	// Invisible where they stand: each of these looks like another name
	// (alice, bob) or like nothing.
	for _, bad := range []string{"ali\u200dce", "alice\u200c", "\u200dalice", "alice\u034f", "alice\ufe0f",
		"ali\U000E0063e", "\U0001F3F4\U000E0067", "alice\U000E007F", "\u3164", "\u2800", "\u0301", "alice\u3164",
		"\ufe0f", "bob\u115f", "alice ", " alice", "alice\u00a0", "\u0915\u200d\u200d\u0937"} {
		if CheckAgent(bad) == nil {
			t.Errorf("CheckAgent(%+q) accepted it", bad)
		}
	}
	for _, bad := range []string{" ", "\u200c", "a\x00", "alice\u200b", "\u202eecila", "ali\u00adce", "bad\xff"} {
		if CheckAgent(bad) == nil {
			t.Errorf("CheckAgent(%q) accepted it", bad)
		}
	}
}
