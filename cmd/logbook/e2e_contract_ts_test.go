package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestContractTypeScriptClient runs e2e/contract.mjs, the semantic check of
// every tool against CONTRACT.md through the official TypeScript SDK client
// (fields, defaults, limits, filters, ordering, paging, the whole task state
// machine, audit sessions and their RFC 9162 roots recomputed by the client,
// skills, every reachable error code and its details, nothing left by a
// failed call), over each way an agent reaches the tools: `logbook serve`
// over stdio, `logbook server` over Streamable HTTP with a bearer token, and
// `logbook serve --connect` bridging stdio to that server. Every case must
// answer the same code on all three. The read-only (a --read-only server, a
// read-only token) and --project (serve --project, server --project over HTTP
// and through serve --connect) modes run their own cases. Needs node and `make e2e-deps`, unless LOGBOOK_SKIP_NODE=1.
func TestContractTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := e2eNode(t, "the contract test")
	bin := e2eBinary(t)
	skills := e2eSkills(t)
	// receipts gathers what each run's calls' tool.called events must say,
	// by ledger file, checked once its process has let the file go.
	var receiptsMu sync.Mutex
	receipts := map[string][]receipt{}
	dbOf := map[string]string{} // a server's URL: its ledger file
	ledgerOf := func(args []string) string {
		if db := argAfter(args, "--db"); db != "" {
			return db
		}
		if url := argAfter(args, "--url"); url != "" {
			return dbOf[url]
		}
		for _, a := range args {
			if bridge, ok := strings.CutPrefix(a, "--serve-args=--connect,"); ok {
				return dbOf[bridge]
			}
		}
		return ""
	}
	contract := func(name string, env []string, args ...string) map[string]string {
		t.Helper()
		cmd := exec.CommandContext(e2eHangBound(t), node, append([]string{"contract.mjs"}, args...)...)
		cmd.Dir = "e2e"
		cmd.Env = append(os.Environ(), append([]string{"LOGBOOK_DB=", "LOGBOOK_AGENT=", "GORACE=halt_on_error=1 exitcode=66"}, env...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		var sum struct {
			OK       bool              `json:"ok"`
			Checks   int               `json:"checks"`
			Failures []string          `json:"failures"`
			Outcomes map[string]string `json:"outcomes"`
			Receipts []receipt         `json:"receipts"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Errorf("%s: contract.mjs (%v) printed no JSON summary: %v\nstdout:\n%s\nstderr:\n%s", name, runErr, err, e2eTrunc(stdout.String(), 4000), e2eTrunc(stderr.String(), 4000))
			return nil
		}
		for _, f := range sum.Failures {
			t.Errorf("%s: %s", name, e2eTrunc(f, 2000))
		}
		if runErr != nil && len(sum.Failures) == 0 {
			t.Errorf("%s: contract.mjs exited with %v and no failures\nstderr:\n%s", name, runErr, e2eTrunc(stderr.String(), 4000))
		}
		t.Logf("%s: %d checks, %d cases", name, sum.Checks, len(sum.Outcomes))
		if db := ledgerOf(args); db != "" {
			for i := range sum.Receipts {
				sum.Receipts[i].run = name
				sum.Receipts[i].Actor = argAfter(args, "--agent")
			}
			receiptsMu.Lock()
			receipts[db] = append(receipts[db], sum.Receipts...)
			receiptsMu.Unlock()
		}
		return sum.Outcomes
	}
	stdio := func(mode string, flags ...string) []string {
		args := []string{"--bin", bin, "--db", filepath.Join(t.TempDir(), "l.db"), "--skills", skills, "--mode", mode, "--agent", "contract-agent"}
		return append(args, "--serve-args="+strings.Join(append([]string{"--agent", "contract-agent"}, flags...), ","))
	}

	// The stdio runs go alongside the HTTP ones: they share nothing.
	var direct, directProject map[string]string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		direct = contract("stdio", nil, stdio("full")...)
		contract("stdio --read-only", nil, stdio("read-only", "--read-only")...)
		directProject = contract("stdio --project", nil, stdio("project=home", "--project", "home")...)
	}()
	defer wg.Wait()

	db := filepath.Join(t.TempDir(), "l.db")
	s := startHTTPServer(t, db)
	dbOf[s.url] = db
	token, _ := addToken(t, db, "--agent", "http-agent")
	roToken, _ := addToken(t, db, "--agent", "http-agent", "--read-only")
	overHTTP := contract("http", nil, "--url", s.url, "--token", token, "--mode", "full", "--agent", "http-agent")
	bridged := contract("serve --connect", []string{"LOGBOOK_TOKEN=" + token}, "--bin", bin, "--mode", "full", "--agent", "http-agent",
		"--serve-args=--connect,"+s.url)
	// The contract's older revision, asked for at initialize: the same
	// answers over HTTP (whose requests then carry it in a header).
	older := contract("http, protocol 2025-06-18", nil, "--url", s.url, "--token", token, "--mode", "full", "--agent", "http-agent", "--protocol", "2025-06-18")
	contract("http read-only token", nil, "--url", s.url, "--token", roToken, "--mode", "read-only", "--agent", "http-agent")
	if code := s.stop(); code != 0 {
		t.Fatalf("server exited %d:\n%s", code, s.stderr.String())
	}
	e2eVerify(t, db)

	rodb := filepath.Join(t.TempDir(), "l.db")
	ro := startHTTPServer(t, rodb, "--read-only")
	dbOf[ro.url] = rodb
	roServerToken, _ := addToken(t, rodb, "--agent", "http-agent")
	contract("http --read-only", nil, "--url", ro.url, "--token", roServerToken, "--mode", "read-only", "--agent", "http-agent")
	if code := ro.stop(); code != 0 {
		t.Fatalf("read-only server exited %d:\n%s", code, ro.stderr.String())
	}

	// A server started with --project: its default project, over HTTP and
	// through serve --connect, each on a ledger of its own (the cases
	// expect a project with no task yet).
	var projectModes []map[string]string
	for _, bridge := range []bool{false, true} {
		pdb := filepath.Join(t.TempDir(), "l.db")
		ps := startHTTPServer(t, pdb, "--project", "home")
		dbOf[ps.url] = pdb
		ptoken, _ := addToken(t, pdb, "--agent", "http-agent")
		if bridge {
			projectModes = append(projectModes, contract("serve --connect, server --project", []string{"LOGBOOK_TOKEN=" + ptoken}, "--bin", bin,
				"--mode", "project=home", "--agent", "http-agent", "--serve-args=--connect,"+ps.url))
		} else {
			projectModes = append(projectModes, contract("http, server --project", nil, "--url", ps.url, "--token", ptoken, "--mode", "project=home", "--agent", "http-agent"))
		}
		if code := ps.stop(); code != 0 {
			t.Fatalf("--project server exited %d:\n%s", code, ps.stderr.String())
		}
	}

	wg.Wait()
	// Every call's tool.called event says what the client saw: the tool,
	// the SHA-256 of its arguments' canonical form, the outcome and the
	// SHA-256 of the reply's text item (CONTRACT.md §1), on every way in.
	for _, db := range slices.Sorted(maps.Keys(receipts)) {
		checkReceipts(t, db, receipts[db])
	}
	for i, name := range []string{"http, server --project", "serve --connect, server --project"} {
		for _, k := range slices.Sorted(maps.Keys(directProject)) {
			if directProject[k] != projectModes[i][k] {
				t.Errorf("--project case %s: stdio answers %s, %s answers %q", k, directProject[k], name, projectModes[i][k])
			}
		}
		if len(projectModes[i]) != len(directProject) {
			t.Errorf("%s ran %d cases, stdio --project %d", name, len(projectModes[i]), len(directProject))
		}
	}
	for _, other := range []struct {
		name     string
		outcomes map[string]string
	}{{"http", overHTTP}, {"serve --connect", bridged}, {"http, protocol 2025-06-18", older}} {
		for _, k := range slices.Sorted(maps.Keys(direct)) {
			if direct[k] != other.outcomes[k] {
				t.Errorf("case %s: stdio answers %s, %s answers %q", k, direct[k], other.name, other.outcomes[k])
			}
		}
		if len(other.outcomes) != len(direct) {
			t.Errorf("%s ran %d cases, stdio %d", other.name, len(other.outcomes), len(direct))
		}
	}
}

// receipt is what a call's tool.called event must say, as the client saw
// the call (contract.mjs's summary.receipts).
type receipt struct {
	Label   string `json:"label"`
	Tool    string `json:"tool"`
	Args    string `json:"args_sha256"`
	Result  string `json:"result_sha256"`
	Outcome string `json:"outcome"`
	// Actor is the identity the run's server must record (its --agent, or
	// the token's agent), Client the client's name it must record beside
	// it (client over stdio, client_claim over HTTP and through a bridge).
	Actor  string `json:"actor"`
	Client string `json:"client"`
	// Subjects are the ids the arguments name (task_id, parent_id,
	// source_task_id, session_id), the events a session's leaves are
	// chosen by.
	Subjects []string `json:"subjects"`
	run      string
}

// key is what a receipt and its event must have in common.
func (r receipt) key() string {
	return strings.Join([]string{r.Tool, r.Args, r.Result, r.Outcome, r.Actor, r.Client, strings.Join(slices.Sorted(slices.Values(r.Subjects)), ",")}, "|")
}

// checkReceipts checks that the ledger db holds a tool.called event for
// each receipt, each event matching one receipt at most.
func checkReceipts(t *testing.T, db string, rs []receipt) {
	t.Helper()
	r := run(t, "replay", "--db", db, "--type", "tool.called")
	if r.code != 0 {
		t.Fatalf("replay %s: %v", db, r)
	}
	events := map[string]int{}
	for line := range strings.Lines(r.stdout) {
		var e struct {
			Actor    string   `json:"actor"`
			Subjects []string `json:"subjects"`
			Payload  struct {
				receipt
				ClientClaim string `json:"client_claim"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("replay line %q: %v", line, err)
		}
		k := e.Payload.receipt
		k.Actor, k.Client, k.Subjects = e.Actor, cmp.Or(k.Client, e.Payload.ClientClaim), e.Subjects
		events[k.key()]++
	}
	for _, rc := range rs {
		if events[rc.key()] == 0 {
			t.Errorf("%s, case %s: no tool.called event of %s by %s (client %s) naming %v with args_sha256 %s, outcome %s, result_sha256 %s (the text item the client got)",
				rc.run, rc.Label, rc.Tool, rc.Actor, rc.Client, rc.Subjects, rc.Args, rc.Outcome, rc.Result)
			continue
		}
		events[rc.key()]--
	}
}

// argAfter is the value following flag in args, "" if none.
func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
