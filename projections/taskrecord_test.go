package projections

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// taskSamples are tasks as a fold leaves them: never updated (with and
// without a parent), updated, blocked, statuses and priorities the codes
// hold and others, strings and lists of every header width, integers of
// every width, negative ones included.
func taskSamples() []Task {
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("y", 70_000)
	many := make([]string, 20)
	for i := range many {
		many[i] = strings.Repeat("l", i*3)
	}
	created := func(n uint64, ts TaskState) Task {
		ts.ID = domain.FormatID(domain.TaskPrefix, n)
		ts.UpdatedAt, ts.UpdatedBy = ts.CreatedAt, ts.CreatedBy
		return Task{TaskState: ts, CreatedSeq: ts.Seq}
	}
	return []Task{
		created(1, TaskState{Title: "t", Status: "backlog", Priority: "normal", Labels: []string{}, CreatedAt: "2026-01-01T00:00:00.000Z", CreatedBy: "a", Seq: 1}),
		created(2, TaskState{Title: long, Description: long, Project: "p", Status: "backlog", Priority: "critical", Labels: []string{"infra"},
			CreatedAt: "2026-01-01T00:00:00.000Z", CreatedBy: "claude", ParentID: "T-0001", Sequence: 3, Seq: 1 << 20}),
		created(3, TaskState{Status: "backlog", Priority: "urgent", EstimateHours: ptr(0.0), Seq: 5}),
		{TaskState: TaskState{ID: "T-0004", Title: long, Description: huge, Project: "p", Status: "blocked", Priority: "high", Progress: -5,
			Assignee: "a", Labels: many, EstimateHours: ptr(-0.25), CreatedAt: "c", UpdatedAt: "u", CreatedBy: "x", UpdatedBy: "y",
			ParentID: "T-0001", BlockedReason: "b", Sequence: 1 << 33, Seq: 255}, CreatedSeq: 128},
		{TaskState: TaskState{ID: "T-0005", Status: "review", Progress: 1 << 31, Seq: 1 << 16, Labels: nil, BlockedReason: "waiting"}, CreatedSeq: 1 << 16},
		{TaskState: TaskState{ID: "T-0006", Status: "done", Progress: 100, CreatedAt: "c", UpdatedAt: "c", CreatedBy: "x", UpdatedBy: "", Seq: 9}, CreatedSeq: 9},
		{TaskState: TaskState{ID: "T-99999", Status: "in_progress", Priority: "low", Seq: 12}, CreatedSeq: 11},
	}
}

// TestTaskRecord: a task's record reads back as the task it was written
// from, copied and in place (the id from the key's number, the buffer of
// the in-place id reused from task to task), and is positional: no field
// names, no id, and, for a task never updated, no updated_at, updated_by
// and seq: the bench task (a 60-character title, a 300-character
// description, its project, time and actor) takes 421 bytes, where the
// map of version 20 took 626.
func TestTaskRecord(t *testing.T) {
	var buf []byte
	for _, want := range taskSamples() {
		b := encodeTask(&want)
		n, _ := domain.ParseID(domain.TaskPrefix, want.ID)
		var copied, inPlace Task
		if err := decodeTask(&copied, n, b, nil); err != nil {
			t.Fatalf("%s: %v", want.ID, err)
		}
		if !reflect.DeepEqual(copied, want) {
			t.Errorf("%s copied:\n got %+v\nwant %+v", want.ID, copied, want)
		}
		inPlace.Title = "left over"
		if err := decodeTask(&inPlace, n, b, &buf); err != nil {
			t.Fatalf("%s: %v", want.ID, err)
		}
		if !reflect.DeepEqual(inPlace, want) {
			t.Errorf("%s in place:\n got %+v\nwant %+v", want.ID, inPlace, want)
		}
		for _, name := range []string{"title", "description", "created_at", want.ID} {
			if strings.Contains(string(b), name) {
				t.Errorf("%s: the record holds %q", want.ID, name)
			}
		}
	}
	title, desc := strings.Repeat("t", 60), strings.Repeat("d", 300)
	task := Task{TaskState: TaskState{ID: "T-0001", Title: title, Description: desc, Project: "bench", Status: "backlog", Priority: "normal",
		Labels: []string{}, CreatedAt: "2026-11-29T20:00:00.000Z", UpdatedAt: "2026-11-29T20:00:00.000Z", CreatedBy: "bench-agent", UpdatedBy: "bench-agent",
		Sequence: 10_000, Seq: 20_000}, CreatedSeq: 20_000}
	strs := len(title) + len(desc) + len(task.Project) + len(task.CreatedAt) + len(task.CreatedBy)
	if got := len(encodeTask(&task)); got > strs+21 {
		t.Errorf("the bench task's record takes %d bytes, want at most %d", got, strs+21)
	}
}

// TestTaskRecordDamaged: a record that is not what encodeTask writes (cut
// short at any byte, with a byte more, of a length the layout has not, a
// status code no status has, a map as version 20 wrote) is a damaged file,
// never a task made up of what it holds.
func TestTaskRecordDamaged(t *testing.T) {
	samples := taskSamples()
	updated := samples[3] // of 18 elements
	updated.Description = "d"
	b := encodeTask(&updated)
	bad := [][]byte{append(b[:len(b):len(b)], 0xc0), {0xdc, 0, 16}, {0x90}, {0xc0}, {}, encodeTask(&samples[0])[:1]}
	for i := range len(b) {
		if i != 2 && i != 3 { // the 18-element array's header is 0x92 + 16
			bad = append(bad, b[:i])
		}
	}
	one := encodeTask(&samples[0]) // its status is code 1, after the array header and two strs
	for _, c := range []byte{0, byte(len(taskCodes)), 0x7f} {
		r := append([]byte(nil), one...)
		r[1+2+2] = c
		bad = append(bad, r)
	}
	m, err := ledger.EncodePayload(&samples[0]) // a map, by the generic writer
	if err != nil {
		t.Fatal(err)
	}
	bad = append(bad, m)
	for _, b := range bad {
		var task Task
		if err := decodeTask(&task, 1, b, nil); !errors.Is(err, boltstore.ErrDamaged) {
			t.Errorf("% x: %v, want ErrDamaged", b[:min(len(b), 32)], err)
		}
	}
}

// FuzzTaskRecord: whatever the bytes, decodeTask does not panic, and what
// it takes, encodeTask writes back as a record that reads the same (the
// same record again: a NaN estimate is not equal to itself).
func FuzzTaskRecord(f *testing.F) {
	for _, s := range taskSamples() {
		f.Add(encodeTask(&s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var task, again Task
		var buf []byte
		if decodeTask(&task, 7, b, &buf) != nil {
			return
		}
		rec := encodeTask(&task)
		if err := decodeTask(&again, 7, rec, nil); err != nil || !bytes.Equal(encodeTask(&again), rec) || again.ID != task.ID {
			t.Fatalf("% x read as %+v; written and read again: %+v, %v", b, task, again, err)
		}
	})
}
