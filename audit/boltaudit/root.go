package boltaudit

import (
	"fmt"

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
		if err == nil {
			err = fromBytes(tx, o.From, o.To, 0, root, ledger.Hash{})
		}
		return TreeRoot{From: o.From, To: o.To, LeafCount: o.To - o.From + 1, Root: root}, err
	case !o.SizeKnown:
		o.Size = head
	case o.Size == 0:
		return TreeRoot{}, audit.BadOption("size", "must be at least 1 (the empty tree's root is SHA-256 of nothing)")
	case o.Size > head:
		return TreeRoot{}, beyondHead("size", o.Size, head)
	}
	root, err := tx.Root(o.Size)
	if err == nil {
		err = fromBytes(tx, 1, o.Size, 0, root, ledger.Hash{})
	}
	return TreeRoot{Size: o.Size, LeafCount: o.Size, Root: root}, err
}

// fromBytes checks that root, read from the file's stored Merkle nodes, is
// the RFC 9162 root of the stored bytes of the events from..to (inclusive),
// and, if mark is not 0, that markRoot is that of the events from..mark:
// the auditor's commands (root, prove, checkpoint) answer for the events'
// bytes, as their help says. The two differ only in a file edited or
// damaged since the nodes were stored — which logbook verify also finds —
// and that is the answer then (boltstore.ErrDamaged: exit 1), not either
// root. It reads every event of the range once: about a second for a
// million.
func fromBytes(tx *boltstore.Tx, from, to, mark uint64, root, markRoot ledger.Hash) error {
	var f ledger.Frontier
	err := tx.ScanRaw(from, to+1, func(seq uint64, raw []byte) error {
		f.Append(ledger.LeafHash(raw))
		if seq == mark && f.Root() != markRoot {
			return damagedRoot(from, mark, f.Root(), markRoot)
		}
		return nil
	})
	if err == nil && f.Root() != root {
		err = damagedRoot(from, to, f.Root(), root)
	}
	return err
}

func damagedRoot(from, to uint64, got, stored ledger.Hash) error {
	return fmt.Errorf("%w: the events %d..%d hash to the root %s, and the file's stored Merkle nodes give %s for them: the file was edited or damaged since they were stored (logbook verify says where)", boltstore.ErrDamaged, from, to, got, stored)
}
