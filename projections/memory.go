package projections

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/search"
)

const (
	spMemories   = "memories"    // memory number → Memory (one version of a key)
	spMemoryKeys = "memory_keys" // namespace of a key (MemoryNamespace) ‖ version → memory number

	counterMemory = "counter.memory"
)

// Memory is one version of a memory key.
type Memory struct {
	events.MemoryWritten
	Hash      string `json:"hash"`
	WrittenAt string `json:"written_at"`
	WrittenBy string `json:"written_by"`
	Seq       uint64 `json:"seq"`
}

// MemoryOf is the memory version the event r, whose payload is p, writes.
func MemoryOf(r ledger.Record, p events.MemoryWritten) Memory {
	return Memory{MemoryWritten: p, Hash: r.Hash.String(), WrittenAt: FormatTime(r.Time), WrittenBy: r.Actor, Seq: r.Seq}
}

// Namespace names where a memory key lives: its scope and its owner (the
// project for scope "project", the agent for scope "agent", "" for global).
type Namespace struct {
	Scope, Owner string
}

// namespaceKey is key ‖ 0 ‖ scope ‖ 0 ‖ uvarint(len(owner)) ‖ owner: the
// key and scope are slugs (no NUL), the owner, an agent's name, may hold
// any byte and so is length-prefixed. All namespaces of a key share the
// prefix key ‖ 0.
func namespaceKey(key string, ns Namespace) []byte {
	b := append(append(append([]byte(key), 0), ns.Scope...), 0)
	b = binary.AppendUvarint(b, uint64(len(ns.Owner)))
	return append(b, ns.Owner...)
}

func memoryNamespace(p *events.MemoryWritten) Namespace {
	switch p.Scope {
	case "project":
		return Namespace{p.Scope, p.Project}
	case "agent":
		return Namespace{p.Scope, p.Agent}
	}
	return Namespace{Scope: p.Scope}
}

func applyMemoryWritten(f *folder, r ledger.Record) error {
	var p events.MemoryWritten
	if err := decode(r, &p); err != nil {
		return err
	}
	m := MemoryOf(r, p)
	n, err := putNumbered(f, domain.MemoryPrefix, counterMemory, spMemories, p.MemoryID, &m)
	if err != nil {
		return err
	}
	keys, err := f.tx.Space(spMemoryKeys)
	if err != nil {
		return err
	}
	ns := namespaceKey(p.Key, memoryNamespace(&p))
	if _, err := replacedMemory(keys, &p); err != nil {
		return err
	}
	if err := keys.Put(append(ns, u64(p.Version)...), u64(n)); err != nil {
		return err
	}
	return nil // its index entry: indexEvent
}

// replacedMemory is the id of the version that memory version p replaces
// ("" for a first version), from the memory_keys space, which keeps every
// version of every key.
func replacedMemory(keys *boltstore.Space, p *events.MemoryWritten) (string, error) {
	if p.Version <= 1 {
		return "", nil
	}
	ns := namespaceKey(p.Key, memoryNamespace(p))
	prev := keys.Get(append(ns, u64(p.Version-1)...))
	if len(prev) != 8 {
		return "", fmt.Errorf("memory %s version %d: version %d missing", p.Key, p.Version, p.Version-1)
	}
	return domain.FormatID(domain.MemoryPrefix, be64(prev)), nil
}

// memoryDoc is what the knowledge index holds of a memory version.
func memoryDoc(r ledger.Record, p *events.MemoryWritten) search.Doc {
	return search.Doc{ID: p.MemoryID, Kind: search.Memory, Project: p.Project, Author: r.Actor, Seq: r.Seq, Hash: r.Hash,
		Fields: []search.Field{{Name: "key", Text: p.Key}, {Name: "content", Text: p.Content}}}
}

func memoryByNumber(tx *boltstore.Tx, n []byte) (Memory, error) {
	memories, err := tx.Space(spMemories)
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	ok, err := getRecord(memories, n, &m)
	if err == nil && !ok {
		err = fmt.Errorf("memory %d missing from projection", be64(n))
	}
	return m, err
}

// LatestMemory is the latest version of key in ns written at or before seq
// asOf; ok is false if there is none.
func LatestMemory(tx *boltstore.Tx, key string, ns Namespace, asOf uint64) (m Memory, ok bool, err error) {
	keys, err := tx.Space(spMemoryKeys)
	if err != nil {
		return m, false, err
	}
	prefix := namespaceKey(key, ns)
	// Versions grow with seq: the first one from the end at or before
	// asOf is the one current then.
	err = keys.Scan(prefix, true, func(k, v []byte) (bool, error) {
		if len(k) != len(prefix)+8 {
			return true, nil // a longer owner sharing the prefix bytes
		}
		mem, err := memoryByNumber(tx, v)
		if err != nil {
			return false, err
		}
		if mem.Seq > asOf {
			return true, nil
		}
		m, ok = mem, true
		return false, nil
	})
	return m, ok, err
}

// MemoryVersions calls fn for every version of key, in every namespace
// that keep accepts, in ledger order, until fn returns false.
func MemoryVersions(tx *boltstore.Tx, key string, keep func(Namespace) bool, fn func(Memory) bool) error {
	keys, err := tx.Space(spMemoryKeys)
	if err != nil {
		return err
	}
	var nums [][]byte
	err = keys.Scan(append([]byte(key), 0), false, func(k, v []byte) (bool, error) {
		ns, ok := parseNamespace(k[len(key)+1 : len(k)-8])
		if ok && keep(ns) {
			nums = append(nums, append([]byte(nil), v...))
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	// Memory numbers are given in ledger order.
	slices.SortFunc(nums, func(a, b []byte) int { return cmp.Compare(be64(a), be64(b)) })
	for _, n := range nums {
		m, err := memoryByNumber(tx, n)
		if err != nil {
			return err
		}
		if !fn(m) {
			return nil
		}
	}
	return nil
}

func parseNamespace(b []byte) (Namespace, bool) {
	i := slices.Index(b, 0)
	if i < 0 {
		return Namespace{}, false
	}
	l, w := binary.Uvarint(b[i+1:])
	if w <= 0 || uint64(len(b)-i-1-w) != l {
		return Namespace{}, false
	}
	return Namespace{Scope: string(b[:i]), Owner: string(b[i+1+w:])}, true
}

// NextMemoryID is the id the next memory version gets.
func NextMemoryID(tx *boltstore.Tx) (string, error) {
	n, err := nextNumber(tx, counterMemory)
	return domain.FormatID(domain.MemoryPrefix, n), err
}
