package commands

import (
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
)

// Learnings written like an agent would, for the gates and duplicate tests.
const (
	retryPattern = "Retry the flock with a blocking wait instead of polling every fifty milliseconds."
	retryContext = "Found while profiling concurrent logbook serve processes sharing one ledger file: bbolt's own " +
		"lock wait sleeps fifty milliseconds between attempts, so a contended commit waited far longer than the holder needed."
	// The same lesson reworded lightly: two words changed, a clause added.
	retryReworded = "Retry the flock with a blocking wait instead of polling every 50 milliseconds."
	retryContext2 = "Found while profiling concurrent logbook serve processes sharing one ledger file: bbolt's own " +
		"lock wait sleeps fifty milliseconds between attempts, so a contended commit waited much longer than the holder needed, " +
		"on every machine we tried."
	// Another lesson about the same subsystem.
	lockPattern = "Hold the ledger file lock only while a commit runs, and close the bbolt handle afterwards."
	lockContext = "Several agents each run their own server on one ledger file; keeping the database open for the " +
		"whole session made every other process time out, whereas opening per batch costs about twenty six microseconds."
)

func learning(pattern, context, project string, extra map[string]any) map[string]any {
	args := map[string]any{"pattern": pattern, "context": context, "project": project}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

func TestRecordLearning(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-a"})
	h.call("task_create", map[string]any{"title": "Speed up commits", "project": "core"}, "OK")
	h.call("task_create", map[string]any{"title": "Other", "project": "web"}, "OK")
	d := h.call("learning_record", learning(retryPattern, retryContext, "core", map[string]any{"tags": []string{"bbolt", "lock", "bbolt"}, "source_task_id": "T-0001"}), "OK")
	wantKeys(t, "learning_record", d, "learning_id", "project", "tags", "hash", "recorded_at", "recorded_by", "seq")
	if d["learning_id"] != "L-0001" || d["project"] != "core" || len(list(t, d["tags"])) != 2 {
		t.Errorf("learning_record = %v", d)
	}
	wantHash(t, "hash", d["hash"])

	// The exact text again, and a light rewording: refused, naming L-0001.
	for _, args := range []map[string]any{learning(retryPattern, retryContext, "core", nil), learning(retryReworded, retryContext2, "core", nil)} {
		before := h.head()
		o := h.do("learning_record", args)
		var dup *DuplicateError
		if o.Code != "ERR_DUPLICATE" || !errors.As(o.Err, &dup) || dup.ExistingID != "L-0001" || dup.Similarity < 0.6 {
			t.Fatalf("duplicate: %s %v", o.Code, o.Err)
		}
		if h.head() != before+1 {
			t.Errorf("a refused learning appended %d events", h.head()-before)
		}
	}
	// Another lesson on the same subject, and the same lesson in another project: fine.
	if d := h.call("learning_record", learning(lockPattern, lockContext, "core", nil), "OK"); d["learning_id"] != "L-0002" {
		t.Errorf("second learning = %v", d)
	}
	h.call("learning_record", learning(retryPattern, retryContext, "web", nil), "OK")

	// Recording the reworded lesson as the replacement of L-0001.
	d = h.call("learning_record", learning(retryReworded, retryContext2, "core", map[string]any{"supersedes": "L-0001"}), "OK")
	if d["learning_id"] != "L-0004" || d["supersedes"] != "L-0001" {
		t.Errorf("superseding learning = %v", d)
	}
	l := getLearning(t, h, "L-0001")
	if l.SupersededBy != "L-0004" || l.SupersededSeq != uint64(d["seq"].(float64))+1 {
		t.Errorf("L-0001 after supersedes = %+v", l)
	}
	// L-0001 is no longer live, so only L-0004 can be duplicated now.
	o := h.do("learning_record", learning(retryPattern, retryContext, "core", nil))
	var dup *DuplicateError
	if o.Code != "ERR_DUPLICATE" || !errors.As(o.Err, &dup) || dup.ExistingID != "L-0004" {
		t.Errorf("after supersede: %s %v", o.Code, o.Err)
	}
}

// TestRecordLearningSpaceless: a learning written in Chinese is recorded,
// and a light rewording of it is a duplicate. Its words were its runs
// between punctuation (a sentence each), so it had too few distinct words
// to be recorded at all, and two rewordings shared no pair of them.
func TestRecordLearningSpaceless(t *testing.T) {
	const (
		pattern = "在多个代理进程共享同一个账本文件时，应当使用阻塞等待来获取文件锁，而不是每隔五十毫秒轮询一次，这样可以显著减少提交的等待时间。"
		context = "我们在分析多个并发的日志服务进程时发现，数据库自带的锁等待在每次尝试之间会休眠五十毫秒，因此一次有竞争的提交等待的时间" +
			"远远超过持有者实际需要的时间。在每台测试机器上都能复现这个问题，改为阻塞等待后延迟下降了一个数量级，吞吐量也随之提高。"
		reworded = "在多个代理进程共享同一个账本文件时，应当使用阻塞等待来获取文件锁，而不是每隔50毫秒轮询一次，这样能够显著减少提交的等待时间。"
		other    = "只在提交运行期间持有账本文件的锁，提交结束后立即关闭数据库句柄，让其他进程有机会写入，而不是整个会话都占着文件。"
	)
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	if d := h.call("learning_record", learning(pattern, context, "core", nil), "OK"); d["learning_id"] != "L-0001" {
		t.Fatalf("learning_record = %v", d)
	}
	o := h.do("learning_record", learning(reworded, context, "core", nil))
	var dup *DuplicateError
	if o.Code != "ERR_DUPLICATE" || !errors.As(o.Err, &dup) || dup.ExistingID != "L-0001" {
		t.Fatalf("reworded: %s %v", o.Code, o.Err)
	}
	h.call("learning_record", learning(other, context+"另外，这个问题在只读进程中也会出现。", "core", nil), "OK")
}

func TestRecordLearningRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	h.call("task_create", map[string]any{"title": "t", "project": "web"}, "OK")
	h.call("learning_record", learning(lockPattern, lockContext, "core", nil), "OK")
	h.call("learning_record", learning(retryPattern, retryContext, "core", nil), "OK")
	h.call("learning_supersede", map[string]any{"learning_id": "L-0002", "by": "L-0001"}, "OK")
	padded := strings.Repeat("lock ", 30)
	cases := []struct {
		name string
		args map[string]any
		code string
		path string
	}{
		{"pattern too short", learning(strings.Repeat("x", 49), lockContext, "core", nil), "ERR_INVALID_INPUT", "pattern"},
		{"context too short", learning(retryPattern, strings.Repeat("y", 99), "core", nil), "ERR_INVALID_INPUT", "context"},
		{"pattern is padding", learning(padded, lockContext, "core", nil), "ERR_INVALID_INPUT", "pattern"},
		{"context is padding", learning(retryPattern, padded, "core", nil), "ERR_INVALID_INPUT", "context"},
		{"blank pattern", learning(strings.Repeat(" ", 60), lockContext, "core", nil), "ERR_INVALID_INPUT", "pattern"},
		{"missing project", map[string]any{"pattern": retryPattern, "context": retryContext}, "ERR_INVALID_INPUT", "project"},
		{"bad project", learning(retryPattern, retryContext, "Core", nil), "ERR_INVALID_INPUT", "project"},
		{"unknown project", learning(retryPattern, retryContext, "nowhere", nil), "ERR_PROJECT_NOT_FOUND", ""},
		{"unknown source task", learning(retryPattern, retryContext, "web", map[string]any{"source_task_id": "T-0042"}), "ERR_TASK_NOT_FOUND", ""},
		{"source task elsewhere", learning(retryPattern, retryContext, "web", map[string]any{"source_task_id": "T-0001"}), "ERR_INVALID_INPUT", "source_task_id"},
		{"21 tags", learning(retryPattern, retryContext, "web", map[string]any{"tags": strings.Split(strings.Repeat("t,", 21), ",")[:21]}), "ERR_INVALID_INPUT", "tags"},
		{"supersedes unknown", learning(retryPattern, retryContext, "web", map[string]any{"supersedes": "L-0099"}), "ERR_INVALID_INPUT", "supersedes"},
		{"supersedes superseded", learning(retryPattern, retryContext, "core", map[string]any{"supersedes": "L-0002"}), "ERR_INVALID_INPUT", "supersedes"},
		{"supersedes elsewhere", learning(retryPattern, retryContext, "web", map[string]any{"supersedes": "L-0001"}), "ERR_INVALID_INPUT", "supersedes"},
		{"duplicate", learning(lockPattern, lockContext, "core", nil), "ERR_DUPLICATE", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.head()
			o := h.do("learning_record", tc.args)
			if o.Code != tc.code {
				t.Fatalf("code %s, want %s: %s", o.Code, tc.code, o.Reply)
			}
			if tc.path != "" && !hasIssue(o.Err, tc.path) {
				t.Errorf("no issue at %q: %v", tc.path, o.Err)
			}
			if h.head() != before+1 {
				t.Errorf("a refused call appended %d events, want 1", h.head()-before)
			}
		})
	}
}

func TestSupersedeLearning(t *testing.T) {
	h := newHarness(t, Options{Agent: "agent-b"})
	h.call("task_create", map[string]any{"title": "t", "project": "core"}, "OK")
	h.call("task_create", map[string]any{"title": "t", "project": "web"}, "OK")
	h.call("learning_record", learning(retryPattern, retryContext, "core", nil), "OK")
	h.call("learning_record", learning(lockPattern, lockContext, "core", nil), "OK")
	h.call("learning_record", learning(lockPattern, lockContext, "web", nil), "OK")
	h.call("learning_record", learning(retryPattern, retryContext, "web", nil), "OK")
	cases := []struct {
		name, id, by, code, path string
	}{
		{"itself", "L-0001", "L-0001", "ERR_INVALID_INPUT", "by"},
		{"unknown learning", "L-0042", "L-0001", "ERR_INVALID_INPUT", "learning_id"},
		{"not an id", "T-0001", "L-0001", "ERR_INVALID_INPUT", "learning_id"},
		{"unknown by", "L-0001", "L-0042", "ERR_INVALID_INPUT", "by"},
		{"other project", "L-0001", "L-0003", "ERR_INVALID_INPUT", "by"},
		{"ok", "L-0001", "L-0002", "OK", ""},
		{"twice", "L-0001", "L-0002", "ERR_INVALID_INPUT", "learning_id"},
		{"by a superseded one", "L-0002", "L-0001", "ERR_INVALID_INPUT", "by"},
		{"ok in web", "L-0004", "L-0003", "OK", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.head()
			o := h.do("learning_supersede", map[string]any{"learning_id": tc.id, "by": tc.by})
			if o.Code != tc.code {
				t.Fatalf("code %s, want %s: %s", o.Code, tc.code, o.Reply)
			}
			if tc.code == "OK" {
				wantKeys(t, "learning_supersede", o.Data, "learning_id", "superseded_by", "project", "hash", "recorded_at", "recorded_by", "seq")
				if o.Data["learning_id"] != tc.id || o.Data["superseded_by"] != tc.by || o.Data["recorded_by"] != "agent-b" {
					t.Errorf("answer = %v", o.Data)
				}
				if h.head() != before+2 {
					t.Errorf("appended %d events, want 2", h.head()-before)
				}
				return
			}
			if !hasIssue(o.Err, tc.path) {
				t.Errorf("no issue at %q: %v", tc.path, o.Err)
			}
			if h.head() != before+1 {
				t.Errorf("a refused call appended %d events, want 1", h.head()-before)
			}
		})
	}
	// The superseded learning stays in the log and the projection, marked.
	if l := getLearning(t, h, "L-0001"); l.SupersededBy != "L-0002" || l.Pattern != retryPattern {
		t.Errorf("L-0001 = %+v", l)
	}
}

func getLearning(t *testing.T, h *harness, id string) projections.Learning {
	t.Helper()
	var l projections.Learning
	err := h.l.View(func(tx *boltstore.Tx) error {
		var ok bool
		var err error
		l, ok, err = projections.GetLearning(tx, id)
		if err == nil && !ok {
			t.Fatalf("no learning %s", id)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
