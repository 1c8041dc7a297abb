//go:build unix

package commands

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTaskList times task_list's handler in a read transaction (which
// holds the file's shared lock: writers of every process wait that long)
// over 10,000 tasks as the peer benchmark makes them (bench/peers,
// taskArgs: three in four in project bench, every priority, two of five
// labels, eight assignees, a 60-character title and a 300-character
// description, one in a hundred mentioning kubernetes), one in ten moved to
// todo: no filter, a project, a status, the peer benchmark's filters
// (priority, label and assignee), and a search of two words.
//
//	go test ./commands -run XXX -bench TaskList
func BenchmarkTaskList(b *testing.B) {
	h := newHarness(b, Options{Agent: "bench"})
	h.tampered = true
	words := []string{"the", "retry", "loop", "backs", "off", "storage", "rate-limits", "bursts", "cache", "manifests", "ETag", "eviction", "régions", "Straße"}
	text := func(i, n int) string {
		s := fmt.Sprint(i, ":")
		for k := i*7 + 1; len(s) < n; k = (k*31 + 17) % 100003 {
			s += " " + words[k%len(words)]
		}
		return s
	}
	labels := []string{"backend", "frontend", "infra", "docs", "security"}
	priorities := []string{"low", "normal", "high", "critical"}
	peerFilter := ListTasksInput{Priority: []string{"high", "critical"}, Label: "infra", Assignee: "agent-2", SortBy: "created"}
	var peerMatches int
	for i := range 10_000 {
		desc := text(i+1_000_000, 300)
		if i%100 == 7 {
			desc += " Kubernetes"
		}
		project := "bench"
		if i%4 == 0 {
			project = "ops"
		}
		ls := []string{labels[i%5], labels[(i+1+((i>>3)%4))%5]}
		id := h.call("task_create", map[string]any{"title": text(i, 60), "project": project, "description": desc,
			"labels": ls, "priority": priorities[i%4], "assignee": fmt.Sprint("agent-", i%8)}, "OK")["task_id"]
		if i%10 == 0 {
			h.call("task_update", map[string]any{"task_id": id, "status": "todo"}, "OK")
		}
		if i%8 == 2 && (i%4 >= 2) && slices.Contains(ls, "infra") {
			peerMatches++
		}
	}
	for _, c := range []struct {
		name string
		in   ListTasksInput
		want int
	}{
		{"all", ListTasksInput{}, 10_000},
		{"project", ListTasksInput{Project: "bench"}, 7_500},
		{"status", ListTasksInput{Status: []string{"todo"}}, 1_000},
		{"filter", peerFilter, peerMatches},
		{"search", ListTasksInput{Search: "kubernetes cache"}, 100},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime(b)
			for b.Loop() {
				err := h.l.View(func(lt *boltstore.Tx) error {
					res, err := h.svc.ListTasks(&Tx{lt: lt}, c.in)
					if err == nil && res.TotalCount != c.want {
						err = fmt.Errorf("%d tasks match, want %d", res.TotalCount, c.want)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			// CPU time is the steadier figure on a shared machine.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkTrail times, in a read transaction, task_get with the thought
// trail of a task of 1,000 thoughts of 300 characters, and
// thought_record_list's first 100 of them.
//
//	go test ./commands -run XXX -bench Trail
func BenchmarkTrail(b *testing.B) {
	h := newHarness(b, Options{Agent: "bench"})
	h.tampered = true
	task := h.call("task_create", map[string]any{"title": "trail", "project": "bench"}, "OK")["task_id"].(string)
	for i := range 1000 {
		h.call("thought_record", map[string]any{"task_id": task, "type": "analysis", "content": fmt.Sprintf("%d: %0300d", i, i)}, "OK")
	}
	limit := 100
	for _, c := range []struct {
		name string
		call func(tx *Tx) (int, error)
		want int
	}{
		{"task_get", func(tx *Tx) (int, error) {
			v, err := h.svc.GetTask(tx, GetTaskInput{TaskID: task, IncludeThoughtTrail: true})
			if err != nil {
				return 0, err
			}
			return len(v.ThoughtTrail), nil
		}, 1000},
		{"thought_record_list", func(tx *Tx) (int, error) {
			v, err := h.svc.ListThoughts(tx, ListThoughtsInput{TaskID: task, Limit: &limit})
			if err != nil {
				return 0, err
			}
			return v.ThoughtCount + len(v.Thoughts), nil
		}, 1100},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime(b)
			for b.Loop() {
				err := h.l.View(func(lt *boltstore.Tx) error {
					n, err := c.call(&Tx{lt: lt})
					if err == nil && n != c.want {
						err = fmt.Errorf("%d, want %d", n, c.want)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkSearchASCII times task_list's search of two words alone
// (containsAll) over the ASCII titles (60 characters) and descriptions
// (300) of the peer benchmark's 10,000 tasks, one in a hundred mentioning
// kubernetes.
//
//	go test ./commands -run XXX -bench SearchASCII
func BenchmarkSearchASCII(b *testing.B) {
	type task struct{ title, desc string }
	var tasks []task
	for i := range 10_000 {
		desc := benchProse(i+1_000_000, 300)
		if i%100 == 7 {
			desc += " Kubernetes"
		}
		tasks = append(tasks, task{benchProse(i, 60), desc})
	}
	words := []string{"kubernetes", "cache"}
	for b.Loop() {
		n := 0
		for _, t := range tasks {
			if containsAll(t.title, t.desc, words) {
				n++
			}
		}
		if n == 0 {
			b.Fatal("nothing found")
		}
	}
}
