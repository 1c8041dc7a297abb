package projections

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// A task's record in the tasks space is a msgpack array of its fields'
// values in this order, with no field names (a map keyed by them spent
// 160 of a task's 660 bytes on names), and without what the record is
// told from: the task's id is its key's number, and a task not changed
// since its creation holds no updated_at, updated_by and seq (they are
// its created_at, created_by and created_seq).
//
//	 0 title           5 progress        10 created_by       15 updated_at
//	 1 description     6 assignee        11 created_seq      16 updated_by
//	 2 project         7 labels          12 sequence         17 seq
//	 3 status          8 estimate_hours  13 parent_id
//	 4 priority        9 created_at      14 blocked_reason
//
// Elements 0 to 12 are always there (estimate_hours nil when the task has
// none); 13 and 14 are nil when empty, and left out when nothing follows;
// 15 to 17 are there together or not at all. A status or priority that
// taskCodes holds is its index there, one byte; any other is the string.
// The record is read only by this binary's version of the projections
// (Current): a change of this layout is a change of Version.

// taskCodes are the statuses and priorities a record holds as codes
// (domain.Statuses and domain.Priorities as of projections version 21;
// changing the table changes the layout). Index 0 is not a code.
var taskCodes = []string{"", "backlog", "todo", "in_progress", "blocked", "review", "done", "cancelled", "low", "normal", "high", "critical"}

const (
	taskFieldsCreated = 13 // the elements every record holds
	taskFieldsAll     = 18
)

// encodeTask is task t's record.
func encodeTask(t *Task) []byte {
	n := taskFieldsCreated
	switch {
	case t.Seq != t.CreatedSeq || t.UpdatedAt != t.CreatedAt || t.UpdatedBy != t.CreatedBy:
		n = taskFieldsAll
	case t.BlockedReason != "":
		n = 15
	case t.ParentID != "":
		n = 14
	}
	w := mw{b: make([]byte, 0, 96+len(t.Title)+len(t.Description)+len(t.Project)+len(t.Assignee)+2*len(t.CreatedAt))}
	w.arrayLen(n)
	w.str(t.Title)
	w.str(t.Description)
	w.str(t.Project)
	w.taskCode(t.Status)
	w.taskCode(t.Priority)
	w.int(int64(t.Progress))
	w.str(t.Assignee)
	w.strs(t.Labels)
	if t.EstimateHours != nil {
		w.b = binary.BigEndian.AppendUint64(append(w.b, 0xcb), math.Float64bits(*t.EstimateHours))
	} else {
		w.b = append(w.b, 0xc0)
	}
	w.str(t.CreatedAt)
	w.str(t.CreatedBy)
	w.uint(t.CreatedSeq)
	w.uint(t.Sequence)
	if n > taskFieldsCreated {
		w.optStr(t.ParentID)
	}
	if n > 14 {
		w.optStr(t.BlockedReason)
	}
	if n == taskFieldsAll {
		w.str(t.UpdatedAt)
		w.str(t.UpdatedBy)
		w.uint(t.Seq)
	}
	return w.b
}

// optStr writes s, or nil for "".
func (w *mw) optStr(s string) {
	if s == "" {
		w.b = append(w.b, 0xc0)
		return
	}
	w.str(s)
}

func (w *mw) taskCode(s string) {
	if i := slices.Index(taskCodes, s); i > 0 {
		w.b = append(w.b, byte(i))
		return
	}
	w.str(s)
}

// decodeTask reads the record b of task number n into t, all of it (what
// t held is not kept). With buf nil, t's strings are slices of one copy of
// b (and its id a string of its own); else they are slices of b itself,
// and its id of *buf, which the next call reuses: valid only as long as b
// is, and until the next call with buf (TasksInPlace). A record that does
// not decode is a damaged file (a projection of another version is never
// read: Current).
func decodeTask(t *Task, n uint64, b []byte, buf *[]byte) error {
	*t = Task{}
	r := mp{b: b}
	if buf == nil {
		r.s = string(b)
		t.ID = domain.FormatID(domain.TaskPrefix, n)
	} else {
		r.s = unsafe.String(unsafe.SliceData(b), len(b))
		*buf = domain.AppendID((*buf)[:0], domain.TaskPrefix, n)
		t.ID = unsafe.String(unsafe.SliceData(*buf), len(*buf))
	}
	if !t.decodeFrom(&r) {
		return fmt.Errorf("%w: the record of task %s does not decode", boltstore.ErrDamaged, t.ID)
	}
	return nil
}

func (t *Task) decodeFrom(r *mp) bool {
	n, isNil, ok := r.arrayLen()
	if !ok || isNil || n < taskFieldsCreated || n > taskFieldsAll || n > 15 && n < taskFieldsAll {
		return false
	}
	ok = r.str(&t.Title) && r.str(&t.Description) && r.str(&t.Project) && r.taskCode(&t.Status) && r.taskCode(&t.Priority) &&
		r.int(&t.Progress) && r.str(&t.Assignee) && r.strs(&t.Labels) && r.floatPtr(&t.EstimateHours) &&
		r.str(&t.CreatedAt) && r.str(&t.CreatedBy) && r.uint(&t.CreatedSeq) && r.uint(&t.Sequence) &&
		(n < 14 || r.optStr(&t.ParentID)) && (n < 15 || r.optStr(&t.BlockedReason))
	if !ok {
		return false
	}
	if n < taskFieldsAll {
		t.UpdatedAt, t.UpdatedBy, t.Seq = t.CreatedAt, t.CreatedBy, t.CreatedSeq
	} else if !r.str(&t.UpdatedAt) || !r.str(&t.UpdatedBy) || !r.uint(&t.Seq) {
		return false
	}
	return r.off == len(r.b)
}

// taskCode reads a status or priority: a code of taskCodes, or a str.
func (r *mp) taskCode(dst *string) bool {
	if r.off < len(r.b) && r.b[r.off] <= 0x7f {
		c := int(r.b[r.off])
		r.off++
		if c == 0 || c >= len(taskCodes) {
			return false
		}
		*dst = taskCodes[c]
		return true
	}
	return r.str(dst)
}

// optStr reads a str, or a nil as "".
func (r *mp) optStr(dst *string) bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return r.str(dst)
}
