package projections

import (
	"encoding/binary"
	"math"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
)

// A fold decodes the payload of nearly every event: through msgpack's
// generic reflection reader that was a fifth of a rebuild. These
// hand-written readers cover the forms this binary writes (a map of the
// fields by their json names, strings as str, integers, float64, arrays of
// str). Anything else — another key, a value of another type, a key twice,
// a nil where a string was expected — makes a reader give up (ok false),
// and the generic reader decodes the payload instead, exactly as before.
// TestFastCodec and FuzzFastDecode check that both give the same values.
// A task's record, which the fold decodes and re-encodes for each task
// event, has a reader and writer of its own (taskrecord.go).

// fastDecoder is implemented by the payloads and records with a
// hand-written reader. decodeFast reads b into the receiver, setting the
// fields b holds; false (it gave up) leaves them in any state.
type fastDecoder interface {
	decodeFast(b []byte) bool
}

// mp reads msgpack values from b.
type mp struct {
	b   []byte
	off int
	// s, if not empty, is b as a string, which str slices rather than
	// allocating each string (decodeTask).
	s string
}

func (r *mp) code() (byte, bool) {
	if r.off >= len(r.b) {
		return 0, false
	}
	c := r.b[r.off]
	r.off++
	return c, true
}

// be reads a big-endian number of n bytes.
func (r *mp) be(n int) (uint64, bool) {
	if len(r.b)-r.off < n {
		return 0, false
	}
	var v uint64
	for _, c := range r.b[r.off : r.off+n] {
		v = v<<8 | uint64(c)
	}
	r.off += n
	return v, true
}

// mapLen reads a map header.
func (r *mp) mapLen() (int, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), true
	case c == 0xde:
		n, ok := r.be(2)
		return int(n), ok
	case c == 0xdf:
		n, ok := r.be(4)
		return int(n), ok && n <= uint64(len(r.b))
	}
	return 0, false
}

// arrayLen reads an array header; isNil for a msgpack nil.
func (r *mp) arrayLen() (n int, isNil, ok bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false, false
	case c == 0xc0:
		return 0, true, true
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), false, true
	case c == 0xdc:
		n, ok := r.be(2)
		return int(n), false, ok
	case c == 0xdd:
		n, ok := r.be(4)
		return int(n), false, ok && n <= uint64(len(r.b))
	}
	return 0, false, false
}

// strBytes reads a str (no nil: the generic reader decides what a nil
// means) as a slice of b.
func (r *mp) strBytes() ([]byte, bool) {
	c, ok := r.code()
	if !ok {
		return nil, false
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, ok = r.be(1)
	case c == 0xda:
		n, ok = r.be(2)
	case c == 0xdb:
		n, ok = r.be(4)
	default:
		return nil, false
	}
	if !ok || uint64(len(r.b)-r.off) < n {
		return nil, false
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, true
}

func (r *mp) str(dst *string) bool {
	s, ok := r.strBytes()
	if r.s != "" {
		*dst = r.s[r.off-len(s) : r.off]
	} else {
		*dst = string(s)
	}
	return ok
}

// strPtr reads a str into a new string, or a nil into a nil pointer.
func (r *mp) strPtr(dst **string) bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		*dst = nil
		return true
	}
	s := new(string)
	*dst = s
	return r.str(s)
}

// strs reads an array of str into a slice of the array's length (empty,
// not nil, for an empty array); a msgpack nil leaves dst as it was. Both
// as the generic reader gives (it skips a nil list: a field holding one
// keeps its value, nil in a new value).
func (r *mp) strs(dst *[]string) bool {
	n, isNil, ok := r.arrayLen()
	if !ok || n > len(r.b)-r.off { // each str takes a byte at least
		return false
	}
	if isNil {
		return true
	}
	ss := make([]string, n)
	for i := range ss {
		if !r.str(&ss[i]) {
			return false
		}
	}
	*dst = ss
	return true
}

// uint reads an unsigned integer: a positive fixint or a uint.
func (r *mp) uint(dst *uint64) bool {
	c, ok := r.code()
	switch {
	case !ok:
		return false
	case c <= 0x7f:
		*dst = uint64(c)
		return true
	case c >= 0xcc && c <= 0xcf:
		*dst, ok = r.be(1 << (c - 0xcc))
		return ok
	}
	return false
}

// int reads a signed integer of any form but uint64.
func (r *mp) int(dst *int) bool {
	c, ok := r.code()
	if !ok {
		return false
	}
	var v uint64
	switch {
	case c <= 0x7f || c >= 0xe0:
		*dst = int(int8(c))
		return true
	case c >= 0xcc && c <= 0xce:
		v, ok = r.be(1 << (c - 0xcc))
		*dst = int(v)
	case c == 0xd0:
		v, ok = r.be(1)
		*dst = int(int8(v))
	case c == 0xd1:
		v, ok = r.be(2)
		*dst = int(int16(v))
	case c == 0xd2:
		v, ok = r.be(4)
		*dst = int(int32(v))
	case c == 0xd3:
		v, ok = r.be(8)
		*dst = int(int64(v))
	default:
		return false
	}
	return ok
}

func (r *mp) intPtr(dst **int) bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		*dst = nil
		return true
	}
	v := new(int)
	*dst = v
	return r.int(v)
}

// digest reads a ledger.Digest: a bin8 of 32 bytes (as it is written) into
// its hex, or a str (as payloads before binary digests hold it) as it is.
func (r *mp) digest(dst *ledger.Digest) bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc4 {
		if len(r.b)-r.off < 2+32 || r.b[r.off+1] != 32 {
			return false
		}
		*dst = ledger.DigestOf([32]byte(r.b[r.off+2 : r.off+2+32]))
		r.off += 2 + 32
		return true
	}
	s, ok := r.strBytes()
	*dst = ledger.Digest(s)
	return ok
}

// digestSkip checks a digest as digest does, and leaves dst alone.
func (r *mp) digestSkip(*ledger.Digest) bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc4 {
		if len(r.b)-r.off < 2+32 || r.b[r.off+1] != 32 {
			return false
		}
		r.off += 2 + 32
		return true
	}
	_, ok := r.strBytes()
	return ok
}

// floatPtr reads a float64 into a new float64, or a nil into a nil pointer.
func (r *mp) floatPtr(dst **float64) bool {
	c, ok := r.code()
	switch {
	case !ok:
		return false
	case c == 0xc0:
		*dst = nil
		return true
	case c == 0xcb:
		v, ok := r.be(8)
		f := math.Float64frombits(v)
		*dst = &f
		return ok
	}
	return false
}

// fields reads a map of n fields, calling field with each key (a slice of
// b, valid during the call) and its index among the keys decodeFast
// knows; the reader gives up on a key it does not know or sees twice.
func (r *mp) fields(field func(key []byte) (index int, ok bool)) bool {
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	var seen uint64
	for range n {
		k, ok := r.strBytes()
		if !ok {
			return false
		}
		i, ok := field(k)
		if !ok || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
	}
	return r.off == len(r.b)
}

func (p *thoughtPayload) decodeFast(b []byte) bool {
	return decodeThought(b, (*events.ThoughtRecorded)(p), false)
}

// thoughtFoldPayload reads what a fold uses of a thought.recorded payload:
// the fields the fold leaves alone (type, branch, commit, tests, metadata,
// previous hash) are checked as the full reader checks them, and skipped.
type thoughtFoldPayload events.ThoughtRecorded

func (p *thoughtFoldPayload) decodeFast(b []byte) bool {
	return decodeThought(b, (*events.ThoughtRecorded)(p), true)
}

// decodeThought reads a thought.recorded payload, all of it or (lean) only
// what a fold uses.
func decodeThought(b []byte, p *events.ThoughtRecorded, lean bool) bool {
	r := mp{b: b}
	str := func(dst *string) bool {
		if lean {
			_, ok := r.strBytes()
			return ok
		}
		return r.str(dst)
	}
	array := len(b) > 0 && (b[0]&0xf0 == 0x90 || b[0] == 0xdc)
	field := func(k []byte) (int, bool) {
		switch string(k) {
		case "thought_id":
			return 0, r.str(&p.ThoughtID)
		case "task_id":
			return 1, r.str(&p.TaskID)
		case "type":
			// In an array (v3), a positive fixint is a code (ledger.Field.Codes:
			// the types have fewer than 128); any other integer is given up to
			// the generic reader.
			if array && r.off < len(b) && b[r.off] <= 0x7f {
				c := uint64(b[r.off])
				r.off++
				if c == 0 || c >= uint64(len(events.ThoughtTypeCodes)) || events.ThoughtTypeCodes[c] == "" {
					return 2, false
				}
				if !lean {
					p.Type = events.ThoughtTypeCodes[c]
				}
				return 2, true
			}
			return 2, str(&p.Type)
		case "content":
			return 3, r.str(&p.Content)
		case "session_id":
			return 4, r.str(&p.SessionID)
		case "branch":
			return 5, str(&p.Branch)
		case "commit_sha":
			return 6, str(&p.CommitSHA)
		case "tests_run":
			if lean {
				var skip []string
				return 7, r.strs(&skip)
			}
			return 7, r.strs(&p.TestsRun)
		case "blockers":
			return 8, r.strs(&p.Blockers)
		case "metadata":
			return 9, str(&p.Metadata)
		case "previous_hash":
			if lean {
				var skip ledger.Digest
				return 10, r.digestSkip(&skip)
			}
			return 10, r.digest(&p.PreviousHash)
		case "chain_position":
			return 11, r.uint(&p.ChainPosition)
		}
		return 0, false
	}
	if array {
		// Version 2 and later: every field the array does not hold is zero, as the
		// generic reader leaves it (ledger.Positional).
		*p = events.ThoughtRecorded{}
		return r.positional(thoughtFields, field)
	}
	return r.fields(field)
}

// thoughtFields are the names of a version 2 thought.recorded payload's
// elements, in order (events.ThoughtRecorded.PayloadFields).
var thoughtFields = func() (names [][]byte) {
	for _, f := range (&events.ThoughtRecorded{}).PayloadFields() {
		names = append(names, []byte(f.Name))
	}
	return names
}()

// positional reads an array of the fields named in order (a
// ledger.Positional payload), calling field for each element as fields
// does for each key; a nil element is the field's zero value, which the
// caller has set. The reader gives up on an array longer than the
// fields it knows (the generic reader skips those).
func (r *mp) positional(names [][]byte, field func(key []byte) (index int, ok bool)) bool {
	n, isNil, ok := r.arrayLen()
	if !ok || isNil || n > len(names) {
		return false
	}
	for i := range n {
		if r.off < len(r.b) && r.b[r.off] == 0xc0 {
			r.off++
			continue
		}
		if _, ok := field(names[i]); !ok {
			return false
		}
	}
	return r.off == len(r.b)
}

func (p *taskUpdatedPayload) decodeFast(b []byte) bool {
	r := mp{b: b}
	return r.fields(func(k []byte) (int, bool) {
		switch string(k) {
		case "task_id":
			return 0, r.str(&p.TaskID)
		case "status":
			return 1, r.strPtr(&p.Status)
		case "previous_status":
			return 2, r.strPtr(&p.PreviousStatus)
		case "progress":
			return 3, r.intPtr(&p.Progress)
		case "title":
			return 4, r.strPtr(&p.Title)
		case "description":
			return 5, r.strPtr(&p.Description)
		case "priority":
			return 6, r.strPtr(&p.Priority)
		case "assignee":
			return 7, r.strPtr(&p.Assignee)
		case "labels":
			if r.off < len(r.b) && r.b[r.off] == 0xc0 {
				r.off++
				p.Labels = nil
				return 8, true
			}
			p.Labels = new([]string)
			return 8, r.strs(p.Labels)
		case "blocked_reason":
			return 9, r.strPtr(&p.BlockedReason)
		}
		return 0, false
	})
}

func (p *taskCreatedPayload) decodeFast(b []byte) bool {
	r := mp{b: b}
	return r.fields(func(k []byte) (int, bool) {
		switch string(k) {
		case "task_id":
			return 0, r.str(&p.TaskID)
		case "project":
			return 1, r.str(&p.Project)
		case "project_sequence":
			return 2, r.uint(&p.Sequence)
		case "title":
			return 3, r.str(&p.Title)
		case "description":
			return 4, r.str(&p.Description)
		case "parent_id":
			return 5, r.str(&p.ParentID)
		case "priority":
			return 6, r.str(&p.Priority)
		case "labels":
			return 7, r.strs(&p.Labels)
		case "assignee":
			return 8, r.str(&p.Assignee)
		case "estimate_hours":
			return 9, r.floatPtr(&p.EstimateHours)
		case "sequence":
			return 10, r.uint(&p.V1Sequence)
		}
		return 0, false
	})
}

// The payload types with a fast reader, as the events package defines them.
type (
	thoughtPayload     events.ThoughtRecorded
	taskUpdatedPayload events.TaskUpdated
	taskCreatedPayload events.TaskCreated
)

// decodeFast reads b into v with v's hand-written reader, if it has one;
// false if it has none or gives up, with v as it was.
func decodeFast(b []byte, v any) bool {
	switch v := v.(type) {
	case *events.ThoughtRecorded:
		return tryFast(b, (*thoughtPayload)(v))
	case *events.TaskUpdated:
		return tryFast(b, (*taskUpdatedPayload)(v))
	case *events.TaskCreated:
		return tryFast(b, (*taskCreatedPayload)(v))
	}
	return false
}

// tryFast decodes b into v, or leaves v as it was: a reader that gave up
// may have set some fields, and the generic reader sets only those the
// payload holds.
func tryFast[T any, P interface {
	*T
	fastDecoder
}](b []byte, v P) bool {
	was := *v
	if v.decodeFast(b) {
		return true
	}
	*v = was
	return false
}

// mw appends msgpack values to b, each in the form the generic writer
// gives with compact integers.
type mw struct{ b []byte }

func (w *mw) str(s string) {
	switch n := len(s); {
	case n < 32:
		w.b = append(w.b, 0xa0|byte(n))
	case n < 256:
		w.b = append(w.b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, 0xda), uint16(n))
	default:
		w.b = binary.BigEndian.AppendUint32(append(w.b, 0xdb), uint32(n))
	}
	w.b = append(w.b, s...)
}

func (w *mw) uint(v uint64) {
	switch {
	case v <= math.MaxInt8:
		w.b = append(w.b, byte(v))
	case v <= math.MaxUint8:
		w.b = append(w.b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		w.b = binary.BigEndian.AppendUint32(append(w.b, 0xce), uint32(v))
	default:
		w.b = binary.BigEndian.AppendUint64(append(w.b, 0xcf), v)
	}
}

func (w *mw) int(v int64) {
	switch {
	case v >= 0:
		w.uint(uint64(v))
	case v >= -32:
		w.b = append(w.b, byte(v))
	case v >= math.MinInt8:
		w.b = append(w.b, 0xd0, byte(v))
	case v >= math.MinInt16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, 0xd1), uint16(v))
	case v >= math.MinInt32:
		w.b = binary.BigEndian.AppendUint32(append(w.b, 0xd2), uint32(v))
	default:
		w.b = binary.BigEndian.AppendUint64(append(w.b, 0xd3), uint64(v))
	}
}

func (w *mw) strs(ss []string) {
	if ss == nil {
		w.b = append(w.b, 0xc0)
		return
	}
	w.arrayLen(len(ss))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *mw) arrayLen(n int) {
	switch {
	case n < 16:
		w.b = append(w.b, 0x90|byte(n))
	case n <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, 0xdc), uint16(n))
	default:
		w.b = binary.BigEndian.AppendUint32(append(w.b, 0xdd), uint32(n))
	}
}
