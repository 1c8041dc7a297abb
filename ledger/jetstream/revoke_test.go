package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/skills"
	"github.com/nats-io/nuid"
)

// TestCallOnNodeBehindRevocationRefused: node A and node B share one
// stream; node A revokes token T; node B has not followed the revocation
// (its follower, every second on logbook server, has not run since), so
// its copy still holds T valid and its edge lets a call under T through.
// The call is refused all the same — answered ERR_FORBIDDEN, recorded
// with that outcome, nothing else done — because its commit checks the
// token against the stream's head (commands.Options.LedgerTokens, which
// server.Tools sets): either the commit read the stream before it
// decided ("caught up": the last time B compared its head with the
// stream is long past), or it decided against B's stale head, was
// refused by the stream's compare-and-append and ran again on the new
// head ("raced": B's own append was the last it heard of, and it
// compared its head with the stream just now, so the commit reads
// nothing first: CatchUp's skip, headCheckEvery). A call under U, a token
// still valid, in the same situation succeeds, so that neither case can
// pass by refusing everything. Writes and reads answered aside alike.
//
// B's follower is not run: the node is what logbook server assembles
// (server.Serve: the copy, server.Tools, the MCP handler whose bearer
// check reads the copy's tokens projection) but for server.Run's Follow,
// whose turn a call can always come before. Which case a commit meets is
// set by the replica's record of when it last compared its head with the
// stream (checked), not by timing, and told by what B's replica did first
// for the call (its trace: a catch-up read, or an append refused for a
// wrong last sequence). A read answered aside whose recording commit
// finds T revoked falls back to the write path: the recording commit,
// rolled back, takes its catch-up with it, and what it read is known
// (CatchUp's noteKnown), so the fallback's commit reads the stream again
// rather than decide against B's older head — no append of B's is refused
// in the caught-up cases.
func TestCallOnNodeBehindRevocationRefused(t *testing.T) {
	c := sharedCluster(t)
	n := 0
	for _, tool := range []struct{ name, args string }{
		{"task_create", `{"title":"after","project":"p"}`},
		{"task_list", `{"project":"p"}`},
	} {
		for _, raced := range []bool{false, true} {
			for _, revoked := range []bool{true, false} {
				mode, token := "caught_up", "valid"
				if raced {
					mode = "raced"
				}
				if revoked {
					token = "revoked"
				}
				n++
				stream := fmt.Sprintf("behind-%d", n)
				t.Run(tool.name+"/"+mode+"/"+token, func(t *testing.T) {
					behindRevocation(t, c, stream, tool.name, tool.args, raced, revoked)
				})
			}
		}
	}
}

func behindRevocation(t *testing.T, c *cluster, stream, tool, args string, raced, revoked bool) {
	dir := t.TempDir()
	a := openTokenNode(t, c, 0, filepath.Join(dir, "a.db"), stream)
	tokT, shaT := a.issue(t, "agent-t")
	tokU, shaU := a.issue(t, "agent-u")
	b := openTokenNode(t, c, 1, filepath.Join(dir, "b.db"), stream) // caught up at start, as server.Serve's node is
	b.serve(t)
	if ok, code := b.call(t, tokU, "task_create", `{"title":"before","project":"p"}`); !ok {
		t.Fatalf("task_create under U on B before the revocation: %s", code)
	}
	bearer, sha := tokU, shaU
	if revoked {
		bearer, sha = tokT, shaT
	}

	// A, caught up (its follower saw B's call), revokes T: decided
	// against the stream's head, its append is taken at once.
	a.follow(t)
	a.revoke(t, shaT)
	revokedAt := a.head(t).Seq
	if raced {
		// B compared its head with the stream just now, for as long as
		// the call takes: its commit decides without reading the stream.
		b.rep.checked.Store(time.Now().Add(time.Hour).UnixNano())
	} else {
		// B last compared its head with the stream long ago: its commit
		// reads the stream first.
		b.rep.checked.Store(0)
	}

	// B has not followed the revocation: its copy, which its edge checks
	// tokens against, holds T valid, and ends before it.
	if h := b.head(t); h.Seq >= revokedAt {
		t.Fatalf("B holds seq %d, the revocation is seq %d: B followed it", h.Seq, revokedAt)
	}
	for _, tok := range []string{tokT, tokU} {
		if _, err := b.authenticate(context.Background(), tok); err != nil {
			t.Fatalf("B's edge refuses a token before the call: %v", err)
		}
	}
	if raced && (b.rep.acked.Load() != b.head(t).Seq || b.rep.known.Load() > b.head(t).Seq) {
		t.Fatalf("B's last append is not the last it knows of (acked %d, known %d, head %d): its commit would read the stream",
			b.rep.acked.Load(), b.rep.known.Load(), b.head(t).Seq)
	}
	tasksBefore := b.tasks(t)

	from := len(b.replicaTrace())
	ok, code := b.call(t, bearer, tool, args)
	trace := b.replicaTrace()[from:]

	switch {
	case revoked && (ok || code != "ERR_FORBIDDEN"):
		t.Errorf("%s under T on B after A revoked T: ok %v, code %q; want ERR_FORBIDDEN", tool, ok, code)
	case !revoked && !ok:
		t.Errorf("%s under U on B after A revoked T: %s; want it done", tool, code)
	}
	// What B's replica did first for the call: read the stream (caught
	// up), or append what it decided against its stale head and be
	// refused for another's last sequence (raced).
	switch first := append(trace, "nothing")[0]; {
	case raced && !refusedAppend(first):
		t.Errorf("B's replica first did %q for the call: want an append refused for the revocation's seq (the commit deciding against B's stale head)\ntrace: %q", first, trace)
	case !raced && !strings.HasPrefix(first, "catch-up read from"):
		t.Errorf("B's replica first did %q for the call: want a catch-up read (the commit reading the stream before deciding)\ntrace: %q", first, trace)
	case !raced && slices.ContainsFunc(trace, refusedAppend):
		// A commit rolled back after its catch-up (a read's record,
		// refused for T) leaves the next one to read the stream again,
		// not to decide against B's older head and be refused.
		t.Errorf("B read the stream for the call, then appended against its older head:\ntrace: %q", trace)
	}

	// What the stream holds after the revocation, as B and A each see it.
	want := []string{tool + " OK " + sha}
	if tool == "task_create" {
		want = []string{events.TypeTaskCreated, tool + " OK " + sha}
	}
	wantTasks := tasksBefore
	if !revoked && tool == "task_create" {
		wantTasks++
	}
	if revoked {
		want = []string{tool + " ERR_FORBIDDEN " + sha}
	}
	hb := b.head(t)
	a.follow(t)
	if ha := a.head(t); ha != hb {
		t.Errorf("A's head %d %v, B's %d %v", ha.Seq, ha.Hash, hb.Seq, hb.Hash)
	}
	for _, n := range []*tokenNode{b, a} {
		if got := n.eventsAfter(t, revokedAt); strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("%s: events after the revocation: %q, want %q", n.name, got, want)
		}
		if got := n.tasks(t); got != wantTasks {
			t.Errorf("%s: %d tasks, want %d", n.name, got, wantTasks)
		}
	}
}

// tokenNode is a logbook server node on a stream (see
// TestCallOnNodeBehindRevocationRefused): its copy, its tools and, once
// served, their MCP handler.
type tokenNode struct {
	*node
	name  string
	url   string
	mu    sync.Mutex
	trace []string // what its replica did
}

// openTokenNode opens a node's copy of stream at path, connected to the
// cluster's server i first.
func openTokenNode(t *testing.T, c *cluster, i int, path, stream string) *tokenNode {
	t.Helper()
	n := &tokenNode{name: filepath.Base(path)}
	nc := c.connect(t, i, "app")
	rep := openReplica(t, nc, Options{Stream: stream}, hooks{trace: func(format string, args ...any) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.trace = append(n.trace, fmt.Sprintf(format, args...))
	}})
	n.node = openNode(t, path, nc, rep)
	// The projections, as a server's tools bring them up at start.
	if _, err := commands.Rebuild(n.store, projections.RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	return n
}

// serve serves the node's tools as logbook server does: server.Tools
// (commands.Options.LedgerTokens) over MCP's Streamable HTTP, each
// request's bearer token checked against the copy (authenticate).
func (n *tokenNode) serve(t *testing.T) {
	t.Helper()
	set, skipped, err := skills.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	svc, err := commands.New(n.store, commands.Options{LedgerTokens: true, Skills: set, Skipped: skipped, Version: "test", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	edge := mcp.New(svc, mcp.Options{Version: "test", Logger: logger})
	srv := httptest.NewServer(edge.HTTPHandler(mcp.HTTPOptions{Authenticate: n.authenticate}))
	t.Cleanup(srv.Close)
	n.url = srv.URL
}

// authenticate is logbook server's bearer check: the token must be valid
// in the node's copy's tokens projection.
func (n *tokenNode) authenticate(_ context.Context, token string) (*mcp.Identity, error) {
	sum := sha256.Sum256([]byte(token))
	var tok projections.Token
	var ok bool
	err := n.store.View(func(tx *boltstore.Tx) error {
		var err error
		tok, ok, err = projections.LookupToken(tx, sum)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case !ok || tok.RevokedSeq != 0:
		return nil, mcp.ErrUnauthenticated
	}
	return &mcp.Identity{Agent: tok.Agent, Token: tok.SHA256, ReadOnly: tok.ReadOnly, Tools: tok.Tools}, nil
}

// issue records a new token for agent, as logbook token add does, and
// returns it and its hex SHA-256.
func (n *tokenNode) issue(t *testing.T, agent string) (token, sha string) {
	t.Helper()
	token = "lbk_" + nuid.Next()
	sum := sha256.Sum256([]byte(token))
	sha = hex.EncodeToString(sum[:])
	n.appendFolded(t, events.TypeTokenIssued, events.TokenIssued{SHA256: sha, Agent: agent, Issuer: "op"})
	return token, sha
}

// revoke records the revocation of the token whose SHA-256 is sha.
func (n *tokenNode) revoke(t *testing.T, sha string) {
	t.Helper()
	n.appendFolded(t, events.TypeTokenRevoked, events.TokenRevoked{SHA256: sha})
}

func (n *tokenNode) appendFolded(t *testing.T, typ string, payload any) {
	t.Helper()
	b, err := ledger.EncodePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	err = n.store.Update(func(tx *boltstore.Tx) error {
		if _, err := projections.CatchUp(tx, 0); err != nil {
			return err
		}
		rec, err := tx.Append(ledger.Event{Type: typ, Version: events.CurrentVersion(typ), Actor: "op", Payload: b})
		if err != nil {
			return err
		}
		return projections.Apply(tx, rec)
	})
	if err != nil {
		t.Fatalf("%s: %s: %v", n.name, typ, err)
	}
}

// follow brings the node's copy, and its projections, to the stream's
// head, as its follower would.
func (n *tokenNode) follow(t *testing.T) {
	t.Helper()
	info, err := n.rep.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n.rep.noteKnown(info.State.LastSeq)
	err = n.store.Update(func(tx *boltstore.Tx) error {
		_, err := projections.CatchUp(tx, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if h := n.head(t); h.Seq != info.State.LastSeq {
		t.Fatalf("%s caught up to seq %d, the stream holds %d", n.name, h.Seq, info.State.LastSeq)
	}
}

// call calls tool on the node under bearer (the sessionless revision of
// MCP over HTTP) and returns whether it was done, or the error's code.
func (n *tokenNode) call(t *testing.T, bearer, tool, args string) (ok bool, code string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest("POST", n.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	var envelope struct {
		OK    bool `json:"ok"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &answer) != nil || len(answer.Result.Content) != 1 ||
		json.Unmarshal([]byte(answer.Result.Content[0].Text), &envelope) != nil {
		return false, fmt.Sprintf("not a tool's answer: %s %.400s", res.Status, raw)
	}
	return envelope.OK, envelope.Error.Code
}

// head is the head of the node's copy.
func (n *tokenNode) head(t *testing.T) ledger.Head {
	t.Helper()
	var h ledger.Head
	if err := n.store.View(func(tx *boltstore.Tx) error { h = tx.Head(); return nil }); err != nil {
		t.Fatal(err)
	}
	return h
}

// eventsAfter lists the events of the node's copy after seq: a
// tool.called as its tool, outcome and token, others as their type.
func (n *tokenNode) eventsAfter(t *testing.T, seq uint64) []string {
	t.Helper()
	var got []string
	err := n.store.View(func(tx *boltstore.Tx) error {
		return tx.Scan(seq+1, tx.Head().Seq+1, func(r ledger.Record) error {
			if r.Type != events.TypeToolCalled {
				got = append(got, r.Type)
				return nil
			}
			var p events.ToolCalled
			if err := ledger.DecodePayload(r.Payload, &p); err != nil {
				return err
			}
			got = append(got, p.Tool+" "+p.Outcome+" "+string(p.Token))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// tasks counts the tasks of the node's projections. (A read: an Update
// would catch the copy up with the stream.)
func (n *tokenNode) tasks(t *testing.T) int {
	t.Helper()
	count := 0
	err := n.store.View(func(tx *boltstore.Tx) error {
		if _, applied, err := projections.State(tx); err != nil || applied != tx.Head().Seq {
			return fmt.Errorf("projections at seq %d, head %d: %v", applied, tx.Head().Seq, err)
		}
		return projections.Tasks(tx, func(projections.Task) bool { count++; return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return count
}

// replicaTrace is what the node's replica did so far.
func (n *tokenNode) replicaTrace() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.trace...)
}

// refusedAppend reports whether line of a replica's trace is an append
// the stream refused for a last sequence other than the one it was
// decided against.
func refusedAppend(line string) bool {
	// As Append traces it: "publish after …: " and the apiError's text,
	// which ends in its code.
	return strings.HasPrefix(line, "publish after ") && strings.Contains(line, fmt.Sprintf("(%d) in ", codeWrongLastSeq))
}
