package events

import "github.com/logbook-dev/logbook/ledger"

// CurrentVersion is the payload version this binary writes for each event
// type, tool.called included; older versions are upcast on read (see Upcast).
func CurrentVersion(eventType string) uint16 {
	switch eventType {
	case TypeTaskCreated:
		return 2
	case TypeToolCalled: // v2: args_sha256 over RFC 8785 (commands.ArgsSHA256); v3: the digests as 32 bytes (ledger.Digest), the payload an array (ledger.Positional); v4: the tool as a code (ToolCodes)
		return 4
	case TypeThoughtRecorded: // v2: previous_hash as 32 bytes (ledger.Digest), the payload an array (ledger.Positional); v3: its ids left to the event's subjects (ThoughtRecorded.FromSubjects), its type a code (ThoughtTypeCodes)
		return 3
	default:
		return 1
	}
}

// Upcaster is a payload that can be decoded as an older version of itself
// and then converted to the current one.
type Upcaster interface {
	// Upcast converts the payload, decoded from version from, to the
	// current version. A newer version is taken as is: versions only ever
	// add fields, which an older reader ignores.
	Upcast(from uint16) error
}

// SubjectFields is a payload some of whose fields a version leaves to the
// event's subjects rather than store them twice.
type SubjectFields interface {
	// FromSubjects sets those fields of a payload decoded from version
	// version from the event's subjects. It fails for a payload of such a
	// version that stores them after all, or subjects that do not name them.
	FromSubjects(version uint16, subjects []string) error
}

// Upcast converts v, a payload of an event of type typ decoded from payload
// version from, to the current version, if its type has an upcaster, and
// sets the fields its version leaves to the event's subjects.
func Upcast(typ string, from uint16, subjects []string, v any) error {
	if s, ok := v.(SubjectFields); ok {
		if err := s.FromSubjects(from, subjects); err != nil {
			return err
		}
	}
	if u, ok := v.(Upcaster); ok && from != CurrentVersion(typ) {
		return u.Upcast(from)
	}
	return nil
}

// PositionalFields are the fields of typ's payload version version, in
// their order in its array, if that version is stored as one
// (ledger.Positional; a later version only adds elements at the end);
// nil if it is a map. Replay names an array's elements with them.
// (thought.recorded v3 has v2's elements, its ids empty: FromSubjects.)
func PositionalFields(typ string, version uint16) []ledger.Field {
	switch {
	case typ == TypeThoughtRecorded && version >= 2:
		return (&ThoughtRecorded{}).PayloadFields()
	case typ == TypeToolCalled && version >= 3:
		return (&ToolCalled{}).PayloadFields()
	}
	return nil
}

// SubjectFieldNames are the fields of typ's payload version version that
// the payload leaves to the event's subjects, by name, in the subjects'
// order (a field past the last subject is absent); nil for a version that
// stores them. Replay shows them in the payload, as older versions stored
// them.
func SubjectFieldNames(typ string, version uint16) []string {
	if typ == TypeThoughtRecorded && version >= 3 {
		return []string{"thought_id", "task_id", "session_id"}
	}
	return nil
}
