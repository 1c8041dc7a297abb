package events

import "testing"

func TestUpcastTaskCreated(t *testing.T) {
	if got := CurrentVersion(TypeTaskCreated); got != 2 {
		t.Fatalf("CurrentVersion(task.created) = %d, want 2", got)
	}
	v1 := TaskCreated{TaskID: "T-0001", V1Sequence: 7}
	if err := Upcast(TypeTaskCreated, 1, &v1); err != nil {
		t.Fatal(err)
	}
	if v1.Sequence != 7 || v1.V1Sequence != 0 {
		t.Errorf("v1 upcast: Sequence %d, V1Sequence %d; want 7, 0", v1.Sequence, v1.V1Sequence)
	}
	v2 := TaskCreated{Sequence: 3}
	if err := Upcast(TypeTaskCreated, 2, &v2); err != nil || v2.Sequence != 3 {
		t.Errorf("v2 taken as is: %v, Sequence %d", err, v2.Sequence)
	}
	if err := Upcast(TypeTaskCreated, 0, &TaskCreated{}); err == nil {
		t.Error("version 0 upcast without error")
	}
	// A payload without an upcaster is taken as decoded.
	if err := Upcast(TypeTaskUpdated, 7, &TaskUpdated{}); err != nil {
		t.Error(err)
	}
}
