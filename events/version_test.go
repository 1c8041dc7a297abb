package events

import (
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/ledger"
)

func TestUpcastTaskCreated(t *testing.T) {
	if got := CurrentVersion(TypeTaskCreated); got != 2 {
		t.Fatalf("CurrentVersion(task.created) = %d, want 2", got)
	}
	v1 := TaskCreated{TaskID: "T-0001", V1Sequence: 7}
	if err := Upcast(TypeTaskCreated, 1, nil, &v1); err != nil {
		t.Fatal(err)
	}
	if v1.Sequence != 7 || v1.V1Sequence != 0 {
		t.Errorf("v1 upcast: Sequence %d, V1Sequence %d; want 7, 0", v1.Sequence, v1.V1Sequence)
	}
	v2 := TaskCreated{Sequence: 3}
	if err := Upcast(TypeTaskCreated, 2, nil, &v2); err != nil || v2.Sequence != 3 {
		t.Errorf("v2 taken as is: %v, Sequence %d", err, v2.Sequence)
	}
	if err := Upcast(TypeTaskCreated, 0, nil, &TaskCreated{}); err == nil {
		t.Error("version 0 upcast without error")
	}
	// A payload without an upcaster is taken as decoded.
	if err := Upcast(TypeTaskUpdated, 7, nil, &TaskUpdated{}); err != nil {
		t.Error(err)
	}
}

// TestThoughtIDsFromSubjects: a thought.recorded v3 payload stores no ids;
// read through Upcast with its event's subjects it is the payload written,
// session included. A v3 payload storing an id, or subjects that do not
// name thought and task, is an error; a v2 payload keeps its own ids.
func TestThoughtIDsFromSubjects(t *testing.T) {
	full := ThoughtRecorded{ThoughtID: "Θ-0007", TaskID: "T-0002", SessionID: "A-0001", Type: "plan", Content: "c", ChainPosition: 3}
	subjects := []string{"Θ-0007", "T-0002", "A-0001"}
	b, err := ledger.EncodePayload(full.SubjectIDs())
	if err != nil {
		t.Fatal(err)
	}
	long, _ := ledger.EncodePayload(full)
	if len(b) >= len(long) {
		t.Errorf("v3 payload %d bytes, v2's %d", len(b), len(long))
	}
	var got ThoughtRecorded
	if err := ledger.DecodePayload(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := Upcast(TypeThoughtRecorded, 3, subjects, &got); err != nil || fmt.Sprint(got) != fmt.Sprint(full) {
		t.Errorf("v3 read back as %+v (%v), want %+v", got, err, full)
	}
	noSession := full
	noSession.SessionID = ""
	got = ThoughtRecorded{}
	ledger.DecodePayload(b, &got)
	if err := Upcast(TypeThoughtRecorded, 3, subjects[:2], &got); err != nil || fmt.Sprint(got) != fmt.Sprint(noSession) {
		t.Errorf("v3 with two subjects read back as %+v (%v)", got, err)
	}
	for _, s := range [][]string{nil, {"Θ-0007"}, {"Θ-0007", ""}, {"Θ-0007", "T-0002", ""}, {"Θ-0007", "T-0002", "A-0001", "x"}} {
		got = ThoughtRecorded{}
		ledger.DecodePayload(b, &got)
		if err := Upcast(TypeThoughtRecorded, 3, s, &got); err == nil {
			t.Errorf("v3 with subjects %q: no error", s)
		}
	}
	got = full
	if err := Upcast(TypeThoughtRecorded, 3, subjects, &got); err == nil {
		t.Error("a v3 payload storing its ids: no error")
	}
	got = full
	if err := Upcast(TypeThoughtRecorded, 2, []string{"Θ-0001", "T-0001"}, &got); err != nil || got.ThoughtID != "Θ-0007" {
		t.Errorf("v2 payload: %+v (%v), want its own ids", got, err)
	}
}
