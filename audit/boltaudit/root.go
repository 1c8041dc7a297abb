package boltaudit

import (
	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
)

// RootOptions choose the tree Root reads: the first Size events (all of
// them unless SizeKnown), or with Range the events From..To, inclusive, as
// a tree of their own (the root an audit session over exactly those events
// has).
type RootOptions struct {
	Size      uint64
	SizeKnown bool
	Range     bool
	From, To  uint64
}

// TreeRoot is the RFC 9162 root of a tree of events, as logbook root
// --json prints it.
type TreeRoot struct {
	Size      uint64      `json:"size,omitempty"` // the first size events (no range)
	From      uint64      `json:"from,omitempty"` // the range from..to, inclusive
	To        uint64      `json:"to,omitempty"`
	LeafCount uint64      `json:"leaf_count"`
	Root      ledger.Hash `json:"root"`
}

// Root is the root of the tree o chooses, read in tx. A size with a range,
// a range that is not 1 <= From <= To, a size of 0 or anything beyond the
// head is an *audit.OptionError.
func Root(tx *boltstore.Tx, o RootOptions) (TreeRoot, error) {
	head := tx.Head().Seq
	switch {
	case o.Range && o.SizeKnown:
		return TreeRoot{}, &audit.OptionError{Option: "size", With: "from/to"}
	case o.Range && o.From < 1:
		return TreeRoot{}, audit.BadOption("from", "must be at least 1: a range is 1 <= from <= to, both given")
	case o.Range && o.To < o.From:
		return TreeRoot{}, audit.BadOption("to", "must be at least from (%d): a range is 1 <= from <= to, both given", o.From)
	case o.Range && o.To > head:
		return TreeRoot{}, beyondHead("to", o.To, head)
	case o.Range:
		root, err := tx.RangeRoot(o.From, o.To+1)
		return TreeRoot{From: o.From, To: o.To, LeafCount: o.To - o.From + 1, Root: root}, err
	case !o.SizeKnown:
		o.Size = head
	case o.Size == 0:
		return TreeRoot{}, audit.BadOption("size", "must be at least 1 (the empty tree's root is SHA-256 of nothing)")
	case o.Size > head:
		return TreeRoot{}, beyondHead("size", o.Size, head)
	}
	root, err := tx.Root(o.Size)
	return TreeRoot{Size: o.Size, LeafCount: o.Size, Root: root}, err
}
