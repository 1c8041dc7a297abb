package boltaudit

import (
	"fmt"

	"github.com/logbook-dev/logbook/ledger"
)

// eventTree is the RFC 9162 tree the pass recomputes from the events'
// hashes as it reads them. boltstore's check hashes every group of
// 1<<level events up to the lowest stored level from the same hashes
// (boltstore.VerifyOptions.Group): the tree takes that root for the whole
// group, and hashes only the levels above, rather than every node twice.
// A file that stores its leaves (format 1) has no groups: every leaf is
// its own. The level is learnt from the first group given; the leaves wait
// in tail until then, and if none comes within ungrouped leaves the tree
// takes them one by one (level 0).
type eventTree struct {
	groups ledger.Frontier // over the whole groups, each root one leaf of it
	level  uint            // a group's level: it holds 1<<level events
	known  bool            // level is known
	tail   []ledger.Hash   // the leaves of the group being read
	root   ledger.Hash     // the group root given for the next leaf, the group's last
	given  bool            // root is set
	err    error           // a group given out of step with the leaves
}

// group takes the root of group index at level, given before its last
// leaf.
func (t *eventTree) group(level uint, index uint64, root ledger.Hash) {
	switch {
	case !t.known:
		t.level, t.known = level, true
	case level != t.level:
		t.fail(fmt.Errorf("a group of level %d after ones of level %d", level, t.level))
	}
	if index != t.groups.Size || uint64(len(t.tail))+1 != 1<<t.level {
		t.fail(fmt.Errorf("the root of group %d/%d given at leaf %d", level, index, t.Size()))
	}
	t.root, t.given = root, true
}

func (t *eventTree) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// Append adds the leaf with hash h.
func (t *eventTree) Append(h ledger.Hash) {
	if t.given {
		t.groups.Append(t.root)
		t.tail, t.given = t.tail[:0], false
		return
	}
	t.tail = append(t.tail, h)
	switch {
	case !t.known && len(t.tail) == ungrouped:
		// No groups: a leaf each.
		t.known = true
		for _, h := range t.tail {
			t.groups.Append(h)
		}
		t.tail = t.tail[:0]
	case t.known && uint64(len(t.tail)) == 1<<t.level:
		// Not given: hashed here.
		t.groups.Append(ledger.PerfectRoot(t.tail))
		t.tail = t.tail[:0]
	}
}

// ungrouped is how many leaves without a group root tell the tree that
// there are no groups: more than any the lowest stored level holds.
const ungrouped = 64

// Size is the number of leaves appended.
func (t *eventTree) Size() uint64 { return t.groups.Size<<t.level + uint64(len(t.tail)) }

// Frontier returns the tree as a ledger.Frontier of its own (the groups'
// subtrees, then the tail's), which appends leaf by leaf from there.
func (t *eventTree) Frontier() ledger.Frontier {
	var tail ledger.Frontier
	for _, h := range t.tail {
		tail.Append(h)
	}
	nodes := make([]ledger.Hash, 0, len(t.groups.Nodes)+len(tail.Nodes))
	return ledger.Frontier{Size: t.Size(), Nodes: append(append(nodes, t.groups.Nodes...), tail.Nodes...)}
}

// Root returns the root over every leaf appended.
func (t *eventTree) Root() ledger.Hash { return t.Frontier().Root() }
