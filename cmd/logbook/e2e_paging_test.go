package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestListPagingAcrossCreates: task_list has no cursor (the contract gives
// limit and offset), so offset counts into the list as it stands at each
// call. Sorted by created, ascending, a task made meanwhile sorts after
// every task listed before, so the pages a reader walks while another
// process creates tasks neither repeat nor skip one: here a second serve
// process on the same ledger creates tasks while the first pages, and the
// pages put together are every task, once, in creation order. The default
// order (updated, descending) moves every page by one per task created
// before it, as TOOLS.md says.
func TestListPagingAcrossCreates(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "paging.db")
	reader := startAgent(t, "reader", "--db", db, "--skills", "../../fixtures/skills")
	writer := startAgent(t, "writer", "--db", db, "--skills", "../../fixtures/skills")
	create := func(a *agent, title string) string {
		t.Helper()
		env, err := a.callTool("task_create", map[string]any{"title": title, "project": "paging"})
		if err != nil || env["ok"] != true {
			t.Fatalf("task_create %s: %v %v", title, env, err)
		}
		return env["data"].(map[string]any)["task_id"].(string)
	}
	page := func(args map[string]any) []string {
		t.Helper()
		args["project"] = "paging"
		env, err := reader.callTool("task_list", args)
		if err != nil || env["ok"] != true {
			t.Errorf("task_list %v: %v %v", args, env, err)
			return nil
		}
		var ids []string
		for _, x := range env["data"].(map[string]any)["tasks"].([]any) {
			ids = append(ids, x.(map[string]any)["task_id"].(string))
		}
		return ids
	}
	var want []string
	for i := range 7 {
		want = append(want, create(reader, fmt.Sprint("before ", i)))
	}

	// The writer, another process, creates while the reader pages.
	var made []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 12 {
			env, err := writer.callTool("task_create", map[string]any{"title": fmt.Sprint("meanwhile ", i), "project": "paging"})
			if err != nil || env["ok"] != true {
				t.Errorf("writer's task_create: %v %v", env, err)
				return
			}
			made = append(made, env["data"].(map[string]any)["task_id"].(string))
		}
	}()
	const limit = 3
	var got []string
	for offset, writerDone := 0, false; ; {
		p := page(map[string]any{"sort_by": "created", "sort_order": "asc", "limit": limit, "offset": offset})
		got = append(got, p...)
		offset += len(p)
		if len(p) < limit {
			if writerDone {
				break
			}
			wg.Wait() // then the pages catch up with the end
			writerDone = true
		}
	}
	want = append(want, made...)
	if !slices.Equal(got, want) {
		t.Errorf("pages sorted by created, ascending, while another process creates:\n got %v\nwant %v", got, want)
	}

	// The default order: a task created between two pages pushes the last
	// task of the first page onto the second.
	first := page(map[string]any{"limit": limit})
	create(writer, "between pages")
	second := page(map[string]any{"limit": limit, "offset": limit})
	if len(first) != limit || len(second) == 0 || second[0] != first[limit-1] {
		t.Errorf("default order: first page %v, then, one task created, the second %v: want it to start with %s", first, second, first[limit-1])
	}
}
