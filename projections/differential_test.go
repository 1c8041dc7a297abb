package projections_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/search"
)

// genEvent is one event of a generated log.
type genEvent struct {
	typ      string
	version  uint16
	subjects []string
	payload  any
}

// words of the generated texts: repeated words, stems shared, unicode,
// numbers, identifiers, stop words.
var genWords = []string{"walrus", "migration", "migrations", "migrating", "plan", "the", "a", "of", "Ünïcödé", "日本語", "naïve",
	"TestCheckout", "snake_case_name", "v1.2.3", "42", "0x1f", "retry", "retries", "flaky", "uploads", "back-off", "ΣΊΣΥΦΟΣ",
	"emoji🙂", "", "deploy", "checklist", "rate", "limits", "x", "zz"}

func genText(rng *rand.Rand, n int) string {
	w := make([]string, rng.IntN(n+1))
	for i := range w {
		w[i] = genWords[rng.IntN(len(genWords))]
	}
	return strings.Join(w, " ")
}

// genLog makes n events of a log commands could write, and some a log
// could hold that commands do not write (a thought id recorded again, ids
// out of order, chain positions skipped), every type folded.
func genLog(rng *rand.Rand, n int) []genEvent {
	var out []genEvent
	add := func(typ string, subjects []string, payload any) {
		v := events.CurrentVersion(typ)
		if typ == events.TypeThoughtRecorded && rng.IntN(3) == 0 {
			v = uint16(1 + rng.IntN(int(v)))
		}
		out = append(out, genEvent{typ, v, subjects, payload})
	}
	type taskState struct {
		id, project string
		chain       uint64
	}
	var tasks []*taskState
	projects := []string{"p", "q", "ρ"}
	perProject := map[string]uint64{}
	var thought, session, finding, learning, memory uint64
	// Now and then ids that cross the widths of their keys (9999 to
	// 10000; 255 and 65535 blocks of thoughts).
	var taskBase uint64
	if rng.IntN(2) == 0 {
		taskBase, thought, session, finding, learning, memory = 9990, 65536*64-40, 9995, 9990, 9998, 255*64
	}
	var openSessions []string
	sessionTask := map[string]string{}
	var live, allLearnings, allSessions []string
	memVersions := map[string]uint64{}
	statuses := []string{"todo", "in_progress", "blocked", "done"}
	for len(out) < n {
		switch k := rng.IntN(100); {
		case k < 12 || len(tasks) == 0:
			id := domain.FormatID(domain.TaskPrefix, taskBase+uint64(len(tasks)+1))
			p := projects[rng.IntN(len(projects))]
			perProject[p]++
			parent := ""
			if len(tasks) > 0 && rng.IntN(2) == 0 {
				parent = tasks[rng.IntN(len(tasks))].id
			}
			labels := []string{}
			if rng.IntN(2) == 0 {
				labels = []string{"l" + fmt.Sprint(rng.IntN(3))}
			}
			tasks = append(tasks, &taskState{id: id, project: p})
			add(events.TypeTaskCreated, []string{id}, events.TaskCreated{TaskID: id, Project: p, Sequence: perProject[p], Title: genText(rng, 4),
				ParentID: parent, Priority: "normal", Labels: labels, Assignee: "a"})
		case k < 25:
			t := tasks[rng.IntN(len(tasks))]
			st := statuses[rng.IntN(len(statuses))]
			u := events.TaskUpdated{TaskID: t.id, Status: &st}
			if rng.IntN(3) == 0 {
				title := genText(rng, 3)
				u.Title = &title
			}
			if rng.IntN(4) == 0 {
				labels := []string{"m"}
				u.Labels = &labels
			}
			add(events.TypeTaskUpdated, []string{t.id}, u)
		case k < 55:
			t := tasks[rng.IntN(len(tasks))]
			thought++
			tn := thought
			switch rng.IntN(40) {
			case 0:
				if thought > 3 {
					tn = thought - uint64(1+rng.IntN(3)) // recorded again
				}
			case 1:
				tn = thought + 100 + uint64(rng.IntN(100)) // out of order
				thought = tn
			}
			t.chain++
			if rng.IntN(30) == 0 {
				t.chain += uint64(rng.IntN(70)) // a gap
			}
			id := domain.FormatID(domain.ThoughtPrefix, tn)
			p := events.ThoughtRecorded{ThoughtID: id, TaskID: t.id, Type: "plan", Content: genText(rng, 12), ChainPosition: t.chain}
			if rng.IntN(3) == 0 {
				p.Blockers = []string{genText(rng, 3)}
			}
			subjects := []string{id, t.id}
			if len(openSessions) > 0 && rng.IntN(2) == 0 {
				p.SessionID = openSessions[rng.IntN(len(openSessions))]
				subjects = append(subjects, p.SessionID)
			}
			add(events.TypeThoughtRecorded, subjects, p)
		case k < 60:
			t := tasks[rng.IntN(len(tasks))]
			session++
			id := domain.FormatID(domain.SessionPrefix, session)
			scope := []string{"deep", "shallow"}[rng.IntN(2)]
			openSessions, allSessions = append(openSessions, id), append(allSessions, id)
			sessionTask[id] = t.id
			add(events.TypeSessionStarted, []string{id, t.id}, events.SessionStarted{SessionID: id, TaskID: t.id, AuditorID: "aud", Scope: scope})
		case k < 63 && len(openSessions) > 0:
			i := rng.IntN(len(openSessions))
			id := openSessions[i]
			openSessions = slices.Delete(openSessions, i, i+1)
			add(events.TypeSessionFinalized, []string{id, sessionTask[id]}, events.SessionFinalized{SessionID: id, TaskID: sessionTask[id], MerkleRoot: "00"})
		case k < 70:
			t := tasks[rng.IntN(len(tasks))]
			finding++
			id := domain.FormatID(domain.FindingPrefix, finding)
			add(events.TypeFindingRecorded, []string{id, t.id}, events.FindingRecorded{FindingID: id, TaskID: t.id, Project: t.project, Category: "bug",
				Summary: genText(rng, 6), Details: genText(rng, 10), Files: []string{"a.go"}})
		case k < 76:
			learning++
			id := domain.FormatID(domain.LearningPrefix, learning)
			live, allLearnings = append(live, id), append(allLearnings, id)
			add(events.TypeLearningRecorded, []string{id}, events.LearningRecorded{LearningID: id, Project: projects[rng.IntN(len(projects))],
				Pattern: genText(rng, 6), Context: genText(rng, 6), Tags: []string{"t"}})
		case k < 79 && len(live) > 1:
			i := rng.IntN(len(live) - 1)
			old := live[i]
			live = slices.Delete(live, i, i+1)
			add(events.TypeLearningSuperseded, []string{old, live[len(live)-1]}, events.LearningSuperseded{LearningID: old, By: live[len(live)-1]})
		case k < 88:
			memory++
			id := domain.FormatID(domain.MemoryPrefix, memory)
			key := []string{"deploy", "style", "ci"}[rng.IntN(3)]
			scope := []string{"global", "project", "agent"}[rng.IntN(3)]
			m := events.MemoryWritten{MemoryID: id, Key: key, Scope: scope, Content: genText(rng, 8)}
			switch scope {
			case "project":
				m.Project = projects[rng.IntN(len(projects))]
			case "agent":
				m.Agent = []string{"a", "b"}[rng.IntN(2)]
			}
			ns := key + "\x00" + scope + "\x00" + m.Project + m.Agent
			memVersions[ns]++
			m.Version = memVersions[ns]
			add(events.TypeMemoryWritten, []string{id}, m)
		case k < 90:
			sum := fmt.Sprintf("%064x", rng.IntN(4))
			if rng.IntN(3) == 0 {
				add(events.TypeTokenRevoked, nil, events.TokenRevoked{SHA256: sum, Reason: "r"})
			} else {
				add(events.TypeTokenIssued, nil, events.TokenIssued{SHA256: sum, Agent: "a", Issuer: "i"})
			}
		case k < 91:
			add(events.TypeSkillsLoaded, nil, events.SkillsLoaded{Skills: []events.LoadedSkill{{Name: "s", Path: "s/SKILL.md", SHA256: "00"}}})
		case k < 92:
			out = append(out, genEvent{"x.unknown", 1, []string{tasks[0].id}, map[string]any{"a": 1}})
		case k < 94 && len(allSessions) > 0:
			// What commands refuse, a log may hold: a session started or
			// finalized again, a learning superseded again, labels nil.
			id := allSessions[rng.IntN(len(allSessions))]
			t := tasks[rng.IntN(len(tasks))]
			switch rng.IntN(4) {
			case 0:
				add(events.TypeSessionStarted, []string{id, t.id}, events.SessionStarted{SessionID: id, TaskID: t.id, AuditorID: "again", Scope: "deep"})
			case 1:
				add(events.TypeSessionFinalized, []string{id, t.id}, events.SessionFinalized{SessionID: id, MerkleRoot: "11"})
			case 2:
				if len(allLearnings) > 1 {
					add(events.TypeLearningSuperseded, nil, events.LearningSuperseded{LearningID: allLearnings[0], By: allLearnings[1]})
				}
			case 3:
				out = append(out, genEvent{events.TypeTaskUpdated, 1, []string{t.id}, map[string]any{"task_id": t.id, "labels": nil, "title": "again"}})
			}
		default:
			t := tasks[rng.IntN(len(tasks))]
			add(projections.TypeToolCalled, []string{t.id}, projections.ToolCalled{Tool: "task_get", Outcome: "OK"})
		}
	}
	return out
}

// foldLive appends the log to a new ledger as commands would: a few events
// per transaction, each folded as appended (Apply), and now and then some
// appended unfolded (another process) and caught up by the next
// transaction (CatchUp, at times in limited steps).
func foldLive(t *testing.T, rng *rand.Rand, log []genEvent) *boltstore.Store {
	t.Helper()
	l := openClocked(t)
	for len(log) > 0 {
		n := min(1+rng.IntN(4), len(log))
		fold := rng.IntN(8) != 0
		err := l.Update(func(tx *boltstore.Tx) error {
			for {
				done, err := projections.CatchUp(tx, uint64(rng.IntN(3)))
				if err != nil {
					return err
				}
				if done == 0 {
					break
				}
			}
			for _, e := range log[:n] {
				r, err := appendEvent(tx, e.typ, e.version, e.subjects, e.payload)
				if err != nil {
					return err
				}
				if fold {
					if err := projections.Apply(tx, r); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		log = log[n:]
	}
	if err := l.Update(func(tx *boltstore.Tx) error { _, err := projections.CatchUp(tx, 0); return err }); err != nil {
		t.Fatal(err)
	}
	return l
}

// openClocked is openFolded with a clock that moves on a step per event
// appended, from one instant: two ledgers given the same events hold the
// same log.
func openClocked(t *testing.T) *boltstore.Store {
	t.Helper()
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	l, err := boltstore.Open(filepath.Join(t.TempDir(), "ledger.db"), boltstore.Options{Create: true, Now: func() time.Time {
		at = at.Add(1234567 * time.Microsecond)
		return at
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Update(projections.Reset); err != nil {
		t.Fatal(err)
	}
	return l
}

// refoldTx is refoldWith, txChunks Refold chunks per transaction of the
// scratch file, each written out as it is folded (Fold, as a verifier's
// refold) or all at once before the transaction commits (Add and Flush,
// as a rebuild folds them).
func refoldTx(t *testing.T, src *boltstore.Store, batch, txChunks int, once bool) *boltstore.Store {
	t.Helper()
	scratch := openFolded(t)
	recs, root, event := logOf(src)
	var rf projections.Refold
	for len(recs) > 0 {
		err := scratch.Update(func(tx *boltstore.Tx) error {
			for i := 0; i < txChunks && len(recs) > 0; i++ {
				n := min(batch, len(recs))
				fold := rf.Fold
				if once {
					fold = rf.Add
				}
				if err := fold(tx, projections.Prepare(recs[:n]), root, event); err != nil {
					return err
				}
				recs = recs[n:]
			}
			return rf.Flush()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return scratch
}

// searchAll is what a few queries find, as ids and seqs in rank order.
func searchAll(t *testing.T, l *boltstore.Store) string {
	t.Helper()
	var b strings.Builder
	l.View(func(tx *boltstore.Tx) error {
		for _, q := range []string{"walrus", "migration plan", "retry uploads", "deploy checklist", "日本語", "naïve ünïcödé", "42"} {
			hits, err := projections.SearchKnowledge(tx, q, search.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s:", q)
			for _, h := range hits {
				fmt.Fprintf(&b, " %s@%d/%.6f", h.ID, h.Seq, h.Score)
			}
			b.WriteString("\n")
		}
		return nil
	})
	return b.String()
}

// TestDifferentialFold: random logs of every event type, folded live (one
// event at a time, with catch-ups of what another process appended), give
// exactly the projections of every batch fold of the same log: Fold and a
// prepared Refold in chunks of several sizes, several chunks to a
// transaction, and a rebuild reading chunks of several sizes; searches
// answer the same.
func TestDifferentialFold(t *testing.T) {
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	// What each seed's log finds, at the first lump size: a search indexes
	// the lump still waiting in memory, so every lump size finds the same.
	found := map[int]string{}
	for _, lump := range []uint64{1, 16} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("lump %d seed %d", lump, seed), func(t *testing.T) {
				defer projections.SetIndexLump(lump)()
				rng := rand.New(rand.NewPCG(uint64(seed), 1))
				log := genLog(rng, 300+rng.IntN(300)+900*((seed+1)%2)) // long enough for a catch-up to decode beside folding
				live := foldLive(t, rng, log)
				want := fingerprintOf(t, live)
				wantSearch := searchAll(t, live)
				if f, ok := found[seed]; !ok {
					found[seed] = wantSearch
				} else if f != wantSearch {
					t.Errorf("lump %d finds\n%s\nlump 1 finds\n%s", lump, wantSearch, f)
				}
				// (A scratch file holds no events: searched only after a
				// rebuild, which swaps the refold in beside its log.)
				check := func(what string, got *boltstore.Store, searched bool) {
					t.Helper()
					if fp := fingerprintOf(t, got); fp != want {
						c := compare(t, got, live, 4096)
						t.Errorf("%s: fingerprint %x, live %x: %d differences, first %v", what, fp, want, c.Differences, c.First)
					}
					if !searched {
						return
					}
					if s := searchAll(t, got); s != wantSearch {
						t.Errorf("%s: searches\n%s\nlive\n%s", what, s, wantSearch)
					}
				}
				for _, batch := range []int{1, 7, 100000} {
					check(fmt.Sprintf("fold batch %d", batch), refoldWith(t, live, batch, false), false)
					check(fmt.Sprintf("refold batch %d", batch), refoldWith(t, live, batch, true), false)
					check(fmt.Sprintf("refold batch %d, 3 to a tx", batch), refoldTx(t, live, batch, 3, false), false)
					check(fmt.Sprintf("refold batch %d, 3 to a tx written once", batch), refoldTx(t, live, batch, 3, true), false)
				}
				// All of it appended by another process, caught up at once
				// (long enough to decode beside folding) or in steps.
				for _, limit := range []uint64{0, 37} {
					l := openClocked(t)
					err := l.Update(func(tx *boltstore.Tx) error {
						for _, e := range log {
							if _, err := appendEvent(tx, e.typ, e.version, e.subjects, e.payload); err != nil {
								return err
							}
						}
						return nil
					})
					for err == nil {
						var n uint64
						err = l.Update(func(tx *boltstore.Tx) (err error) { n, err = projections.CatchUp(tx, limit); return })
						if n == 0 {
							break
						}
					}
					if err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("catch-up by %d", limit), l, true)
				}
				for _, chunk := range []uint64{3, 0} {
					rebuild(t, live, chunk)
					check(fmt.Sprintf("rebuild chunk %d", chunk), live, true)
				}
			})
		}
	}
}
