package events

import "github.com/logbook-dev/logbook/ledger"

// CurrentVersion is the payload version this binary writes for each event
// type, tool.called included; older versions are upcast on read (see Upcast).
func CurrentVersion(eventType string) uint16 {
	switch eventType {
	case TypeTaskCreated:
		return 2
	case TypeToolCalled: // v2: args_sha256 over RFC 8785 (commands.ArgsSHA256); v3: the digests as 32 bytes (ledger.Digest), the payload an array (ledger.Positional)
		return 3
	case TypeThoughtRecorded: // v2: previous_hash as 32 bytes (ledger.Digest), the payload an array (ledger.Positional)
		return 2
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

// Upcast converts v, a payload of an event of type typ decoded from payload
// version from, to the current version, if its type has an upcaster.
func Upcast(typ string, from uint16, v any) error {
	if u, ok := v.(Upcaster); ok && from != CurrentVersion(typ) {
		return u.Upcast(from)
	}
	return nil
}

// PositionalFields are the fields of typ's payload version version, in
// their order in its array, if that version is stored as one
// (ledger.Positional; a later version only adds elements at the end);
// nil if it is a map. Replay names an array's elements with them.
func PositionalFields(typ string, version uint16) []ledger.Field {
	switch {
	case typ == TypeThoughtRecorded && version >= 2:
		return (&ThoughtRecorded{}).PayloadFields()
	case typ == TypeToolCalled && version >= 3:
		return (&ToolCalled{}).PayloadFields()
	}
	return nil
}
