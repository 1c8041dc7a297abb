//go:build linux

package stdio

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/cmd/logbook-soak/logscan"
)

// event is one line of `logbook replay`.
type event struct {
	Seq      uint64          `json:"seq"`
	Type     string          `json:"type"`
	Actor    string          `json:"actor"`
	Subjects []string        `json:"subjects"`
	Hash     string          `json:"hash"`
	Payload  json.RawMessage `json:"payload"`
}

// runBin runs the binary to its end, in the current boot (not registered:
// a reboot does not kill it): its stdout, stderr and exit code (-1 if it
// could not be started).
func runBin(args ...string) (string, string, int) {
	c := command(args...)
	inBoot(c)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	if err := c.Run(); c.ProcessState == nil {
		return "", err.Error(), -1
	}
	return o.String(), e.String(), c.ProcessState.ExitCode()
}

// seqType is the event type of each writing tool's acknowledged seq.
var seqType = map[string]string{
	"task_create": "task.created", "thought_record": "thought.recorded", "task_update": "task.updated",
	"finding_record": "finding.recorded", "learning_record": "learning.recorded", "learning_supersede": "learning.superseded",
	"memory_write": "memory.written", "audit_session_start": "session.started", "merkle_finalize": "session.finalized",
}

// check checks the ledger against the calls and tokens recorded, prints each
// failure with what was lost or added, and returns 1 if there was one (the
// run's anomalies included), else 0.
func check() int {
	bad := int(anomalies.Load())
	fail := func(f string, a ...any) { bad++; logf("FAIL "+f, a...) }
	counts := map[string]int{}
	for _, c := range calls {
		counts[c.State]++
	}
	logf("calls %d: %v; serve processes started %d, SIGKILLed or SIGSTOPped %d, SIGTERMed or stdin closed %d; server SIGKILLed %d; rebuild/snapshot/token add runs %d (SIGKILLed %d); tokens %d; reboots %d (%d with commits to recover); made read-only %d times",
		len(calls), counts, st.starts.Load(), st.kills.Load(), st.soft.Load(), st.srvKills.Load(), st.auxRuns.Load(), st.auxKills.Load(), len(tokens), st.reboots.Load(), st.unrecovered.Load(), st.chmods.Load())
	for _, l := range logscan.Scan(filepath.Join(*outDir, "*.stderr")) {
		fail("a logbook process crashed, logged a panic or raced: %s", l)
	}
	o, e, ec := runBin("verify", "--db", *db)
	if ec != 0 {
		fail("verify exit %d: %s %s", ec, o, e)
	}
	o, e, ec = runBin("replay", "--db", *db)
	if ec != 0 {
		fail("replay exit %d: %s", ec, e)
		return verdict(bad)
	}
	var evs []event
	for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			fail("replay line: %v", err)
			continue
		}
		evs = append(evs, ev)
	}
	bySeq := map[uint64]*event{}
	resultHash := map[string]int{}
	nonceCount := map[string][]uint64{}
	for i := range evs {
		ev := &evs[i]
		bySeq[ev.Seq] = ev
		if ev.Type == "tool.called" {
			var p struct {
				R string `json:"result_sha256"`
			}
			json.Unmarshal(ev.Payload, &p)
			resultHash[p.R]++
			continue
		}
		s := string(ev.Payload)
		for _, idx := range findNonces(s) {
			nonceCount[idx] = append(nonceCount[idx], ev.Seq)
		}
	}
	// contiguity: each run of domain events ends with a tool.called of the same actor
	for i := 0; i < len(evs); i++ {
		ev := evs[i]
		if ev.Type == "tool.called" || strings.HasPrefix(ev.Type, "token.") || ev.Type == "skills.loaded" || strings.HasPrefix(ev.Type, "projection") {
			continue
		}
		j := i + 1
		for j < len(evs) && evs[j].Type != "tool.called" && evs[j].Actor == ev.Actor && evs[j].Type != "skills.loaded" && !strings.HasPrefix(evs[j].Type, "token.") {
			j++
		}
		if j >= len(evs) || evs[j].Type != "tool.called" || evs[j].Actor != ev.Actor {
			fail("event %d %s by %s not followed by its tool.called (next: %+v)", ev.Seq, ev.Type, ev.Actor, func() any {
				if j < len(evs) {
					return evs[j].Type + " by " + evs[j].Actor
				}
				return "end"
			}())
		}
		i = j
	}
	okWrites := 0
	for _, c := range calls {
		if c.Tool == "merkle_finalize" || c.Tool == "learning_supersede" {
			c.Nonce = ""
		}
		h := sha256.Sum256([]byte(c.Text))
		hx := hex.EncodeToString(h[:])
		seqs := nonceCount[c.Nonce]
		switch c.State {
		case "ok":
			if resultHash[hx] < 1 {
				fail("%s %s %v (nonce %q) was acknowledged, but no tool.called records its reply (result_sha256 %s): its record is lost", c.Agent, c.Tool, c.Args, c.Nonce, hx)
			}
			if _, w := seqType[c.Tool]; w {
				okWrites++
			}
			if c.Nonce != "" {
				if len(seqs) != 1 {
					fail("%s %s (nonce %s) was acknowledged, and its events are in the log %d times (seqs %v), not once", c.Agent, c.Tool, c.Nonce, len(seqs), seqs)
				}
			}
			if t, ok := seqType[c.Tool]; ok {
				var d struct {
					Seq   uint64 `json:"seq"`
					Start uint64 `json:"start_seq"`
					Size  uint64 `json:"ledger_size"`
				}
				json.Unmarshal(c.Data, &d)
				if d.Seq == 0 {
					d.Seq = d.Start + d.Size
				}
				ev := bySeq[d.Seq]
				if ev == nil || ev.Type != t {
					fail("%s %s (nonce %s) was acknowledged at seq %d, where the log has %+v, not a %s", c.Agent, c.Tool, c.Nonce, d.Seq, ev, t)
				}
			}
		case "err":
			if resultHash[hx] < 1 {
				fail("%s %s (nonce %q) was refused with %s, but no tool.called records that reply (result_sha256 %s)", c.Agent, c.Tool, c.Nonce, c.Code, hx)
			}
			if len(seqs) != 0 {
				fail("%s %s (nonce %s) was refused with %s, but its events are in the log at seqs %v", c.Agent, c.Tool, c.Nonce, c.Code, seqs)
			}
		case "storage":
			if !c.Unknown && len(seqs) != 0 {
				fail("%s %s (nonce %s) was refused with ERR_STORAGE saying nothing was recorded (%s), but its events are in the log at seqs %v", c.Agent, c.Tool, c.Nonce, c.Text, seqs)
			}
			if len(seqs) > 1 {
				fail("%s %s (nonce %s), outcome unknown, is in the log more than once: seqs %v", c.Agent, c.Tool, c.Nonce, seqs)
			}
		default:
			if len(seqs) > 1 {
				fail("%s %s (nonce %s), never answered, is in the log more than once: seqs %v", c.Agent, c.Tool, c.Nonce, seqs)
			}
		}
	}
	storageMsgs := map[string]int{}
	for _, c := range calls {
		if c.State == "storage" {
			var env struct {
				Error struct{ Message string } `json:"error"`
			}
			json.Unmarshal([]byte(c.Text), &env)
			m := env.Error.Message
			if len(m) > 120 {
				m = m[:120]
			}
			storageMsgs[m]++
		}
	}
	for m, n := range storageMsgs {
		logf("ERR_STORAGE x%d: %s", n, m)
	}
	for _, tk := range tokens {
		h := sha256.Sum256([]byte(tk))
		hx := hex.EncodeToString(h[:])
		found := false
		for _, ev := range evs {
			if strings.Contains(string(ev.Payload), hx) {
				found = true
				break
			}
		}
		if !found {
			fail("token add printed a token (%.6s…) whose SHA-256 %s no event of the log holds: lost", tk, hx)
		}
	}
	// projections: tasks --json equals a rebuild of a snapshot copy
	t1, e1, ec1 := runBin("tasks", "--db", *db, "--json")
	if ec1 != 0 {
		fail("tasks: %s", e1)
	}
	cp := filepath.Join(*outDir, fmt.Sprintf("final-%d.db", time.Now().UnixNano()))
	if _, e, ec := runBin("snapshot", "--db", *db, "--out", cp); ec != 0 {
		fail("snapshot: %s", e)
	} else {
		if _, e, ec := runBin("rebuild", "--db", cp); ec != 0 {
			fail("rebuild: %s", e)
		}
		t2, _, _ := runBin("tasks", "--db", cp, "--json")
		if t1 != t2 {
			os.WriteFile(cp+".live.json", []byte(t1), 0o644)
			os.WriteFile(cp+".rebuilt.json", []byte(t2), 0o644)
			fail("tasks --json of the ledger and of its snapshot rebuilt differ: %s.{live,rebuilt}.json", cp)
		}
		os.Remove(cp)
		os.Remove(cp + ".journal")
	}
	// every task in the projection has its task.created
	var tl struct {
		Tasks []struct {
			TaskID     string `json:"task_id"`
			CreatedSeq uint64 `json:"created_seq"`
			Status     string `json:"status"`
		} `json:"tasks"`
	}
	json.Unmarshal([]byte(t1), &tl)
	created := 0
	for _, ev := range evs {
		if ev.Type == "task.created" {
			created++
		}
	}
	if created != len(tl.Tasks) {
		fail("tasks %d, task.created %d", len(tl.Tasks), created)
	}
	for _, tk := range tl.Tasks {
		ev := bySeq[tk.CreatedSeq]
		if ev == nil || ev.Type != "task.created" || len(ev.Subjects) == 0 || ev.Subjects[0] != tk.TaskID {
			fail("task %s created_seq %d: %+v", tk.TaskID, tk.CreatedSeq, ev)
		}
	}
	logf("checked: %d events, %d acknowledged writes, %d tasks, %d tokens", len(evs), okWrites, len(tl.Tasks), len(tokens))
	return verdict(bad)
}

// verdict prints the run's last line, with bad failures, and returns its
// exit code.
func verdict(bad int) int {
	if bad > 0 {
		logf("FAIL: %d failures (the lines marked FAIL above); the ledger and the agents' logs are in %s", bad, *outDir)
		return 1
	}
	logf("PASS: every check passed")
	return 0
}

func findNonces(s string) []string {
	var out []string
	seen := map[string]bool{}
	for {
		i := strings.Index(s, "Nagent")
		if i < 0 {
			break
		}
		s = s[i:]
		j := 1
		for j < len(s) && (s[j] == '-' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z') {
			j++
		}
		n := s[:j]
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
		s = s[j:]
	}
	sort.Strings(out)
	return out
}
