package projections

import (
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// An open session's entry reads back as written, and an entry that is not
// one (a damaged file) is refused rather than read as another session's.
func TestOpenSessionEntry(t *testing.T) {
	for _, s := range []Session{
		{SessionStarted: events.SessionStarted{SessionID: "A-0001", TaskID: "T-0007", Scope: "deep"}},
		{SessionStarted: events.SessionStarted{SessionID: "A-12345", TaskID: "T-0001", Scope: "task"}},
	} {
		v := encodeOpen(&s)
		o, ok := decodeOpen(9, v)
		if !ok || o.n != 9 || o.id != s.SessionID || o.taskID != s.TaskID || o.deep != (s.Scope == "deep") {
			t.Errorf("%+v: entry %x read back as %+v, %v", s.SessionStarted, v, o, ok)
		}
		for cut := range len(v) {
			if _, ok := decodeOpen(9, v[:cut]); ok {
				t.Errorf("%+v: entry cut to %d bytes read as one", s.SessionStarted, cut)
			}
		}
		if _, ok := decodeOpen(9, append(v, 'x')); ok {
			t.Errorf("%+v: entry with a byte more read as one", s.SessionStarted)
		}
		bad := append([]byte(nil), v...)
		bad[0] = 2
		if _, ok := decodeOpen(9, bad); ok {
			t.Errorf("%+v: a deep flag of 2 read as one", s.SessionStarted)
		}
	}
}
