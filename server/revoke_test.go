package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/mcp"
)

// TestCallCommittedAfterRevocationRefused: the edge checks a token when a
// request comes and once its body is read, but the call may then wait for
// the file (the lock, a long commit, another node's events) while the
// token's revocation commits. Such a call runs nothing: it is answered
// ERR_FORBIDDEN and recorded so, writes and reads alike (a read answered
// aside is not sent). The authenticator here always accepts the token, as
// one that checked it just before the revocation did.
func TestCallCommittedAfterRevocationRefused(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true}) // held: reads are answered aside
	tok, issued, err := IssueToken(l, Issue{Agent: "a", Issuer: "op"})
	if err != nil {
		t.Fatal(err)
	}
	edge, err := Tools(l, t.TempDir(), "test", commands.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	stale := func(context.Context, string) (*mcp.Identity, error) {
		return &mcp.Identity{Agent: issued.Agent, Token: issued.SHA256}, nil
	}
	srv := httptest.NewServer(edge.HTTPHandler(mcp.HTTPOptions{Authenticate: stale}))
	defer srv.Close()
	call := func(tool, args string) string { return postCall(srv.URL, tok, tool, args) }
	create := `{"title":"t","project":"p"}`
	if out := call("task_create", create); !strings.Contains(out, `\"ok\":true`) {
		t.Fatalf("before the revocation: %.300s", out)
	}
	if _, err := RevokeTokens(l, Revoke{SHA256: issued.SHA256, Issuer: "op"}); err != nil {
		t.Fatal(err)
	}
	var revokedAt uint64
	l.View(func(tx *boltstore.Tx) error { revokedAt = tx.Head().Seq; return nil })
	for _, c := range []struct{ tool, args string }{
		{"task_create", create},
		{"task_list", `{"project":"p"}`},
		{"server_ping", `{}`},
	} {
		out := call(c.tool, c.args)
		if !strings.Contains(out, `ERR_FORBIDDEN`) || !strings.Contains(out, "revoked before the call") || strings.Contains(out, `\"ok\":true`) {
			t.Errorf("%s after the revocation: %.400s, want ERR_FORBIDDEN", c.tool, out)
		}
	}
	// After the revocation: the three calls, recorded refused, and nothing else.
	var got []string
	err = l.View(func(tx *boltstore.Tx) error {
		return tx.Scan(revokedAt+1, tx.Head().Seq+1, func(r ledger.Record) error {
			if r.Type != events.TypeToolCalled {
				got = append(got, r.Type)
				return nil
			}
			var p events.ToolCalled
			if err := ledger.DecodePayload(r.Payload, &p); err != nil {
				return err
			}
			got = append(got, p.Tool+" "+p.Outcome)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "task_create ERR_FORBIDDEN,task_list ERR_FORBIDDEN,server_ping ERR_FORBIDDEN"; strings.Join(got, ",") != want {
		t.Errorf("events after the revocation: %v, want %s", got, want)
	}
}

// postCall sends one tools/call in the sessionless revision with bearer,
// and returns the answer's body (or the error, if none came).
func postCall(url, bearer, tool, args string) string {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TestReadRevokedWhileReadAside: a read answered aside whose token is
// revoked between its read and the commit recording it is answered
// ERR_FORBIDDEN (recorded), as any call committed after the revocation;
// it was answered ERR_STORAGE, unrecorded (review). Rounds of concurrent
// reads meet a revocation at varying points: ok or ERR_FORBIDDEN are both
// right, whichever the timing; anything else is not.
func TestReadRevokedWhileReadAside(t *testing.T) {
	l, _ := openStore(t, boltstore.Options{Hold: true})
	edge, err := Tools(l, t.TempDir(), "test", commands.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var shas sync.Map
	srv := httptest.NewServer(edge.HTTPHandler(mcp.HTTPOptions{Authenticate: func(_ context.Context, tok string) (*mcp.Identity, error) {
		// as one that checked it just before the revocation did
		sha, _ := shas.Load(tok)
		return &mcp.Identity{Agent: tok, Token: sha.(string)}, nil
	}}))
	defer srv.Close()
	call := func(agent, tool, args string) string { return postCall(srv.URL, agent, tool, args) }
	if _, rec, err := IssueToken(l, Issue{Agent: "setup", Issuer: "op"}); err != nil {
		t.Fatal(err)
	} else {
		shas.Store("setup", rec.SHA256)
	}
	for i := range 400 {
		if out := call("setup", "task_create", fmt.Sprintf(`{"title":"t%d","project":"p"}`, i)); !strings.Contains(out, `\"ok\":true`) {
			t.Fatalf("setup: %.300s", out)
		}
	}
	t0 := time.Now()
	call("setup", "audit_verify_chain", `{}`)
	d := time.Since(t0)
	t.Logf("one verify: %v", d)
	bad := map[string]int{}
	for round := range 40 {
		agent := fmt.Sprintf("a%d", round)
		_, issued, err := IssueToken(l, Issue{Agent: agent, Issuer: "op"})
		if err != nil {
			t.Fatal(err)
		}
		shas.Store(agent, issued.SHA256)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := call(agent, "audit_verify_chain", `{}`)
				kind := "other"
				switch {
				case strings.Contains(out, `\"ok\":true`):
					kind = "ok"
				case strings.Contains(out, "ERR_FORBIDDEN"):
					kind = "forbidden"
				}
				mu.Lock()
				bad[kind]++
				if kind == "other" && bad[kind] == 1 {
					t.Errorf("a read whose token was revoked meanwhile: %.600s", out)
				}
				mu.Unlock()
			}()
		}
		time.Sleep(d * time.Duration(round%8+1) / 4)
		if _, err := RevokeTokens(l, Revoke{SHA256: issued.SHA256, Issuer: "op"}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	t.Logf("outcomes: %v", bad)
}
