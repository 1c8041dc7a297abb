package audit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/audit"
	"github.com/logbook-dev/logbook/ledger"
)

// memLog is a log of a few events kept in memory: the stored bytes and the
// Merkle nodes, as a storage engine keeps them.
type memLog struct {
	events [][]byte
	nodes  map[[2]uint64]ledger.Hash // (level, index) → node
}

func (l *memLog) node(level uint, index uint64) (ledger.Hash, error) {
	h, ok := l.nodes[[2]uint64{uint64(level), index}]
	if !ok {
		return h, errors.New("no such node")
	}
	return h, nil
}

func (l *memLog) append(typ string) {
	seq := uint64(len(l.events)) + 1
	var prev ledger.Hash
	if seq > 1 {
		prev = ledger.LeafHash(l.events[seq-2])
	}
	e := ledger.Event{Seq: seq, Time: time.Unix(1700000000, 0).UTC(), Type: typ, Version: 1, Actor: "agent", Prev: prev}
	raw, err := e.Encode()
	if err != nil {
		panic(err)
	}
	nodes, err := ledger.AppendNodes(seq-1, ledger.LeafHash(raw), l.node)
	if err != nil {
		panic(err)
	}
	for _, n := range nodes {
		l.nodes[[2]uint64{uint64(n.Level), n.Index}] = n.Hash
	}
	l.events = append(l.events, raw)
}

// An auditor checks that an event is in a published log with nothing but
// this package: the log's operator signs a checkpoint and hands out a proof;
// the auditor opens the checkpoint with the verifier key and checks the
// proof against the root it signed.
func Example() {
	log := &memLog{nodes: map[[2]uint64]ledger.Hash{}}
	for _, typ := range []string{"task.created", "thought.recorded", "task.updated", "tool.called", "task.updated"} {
		log.append(typ)
	}
	size := uint64(len(log.events))

	// The operator: a key pair, a signed checkpoint, a proof for event 3.
	keys, _ := audit.NewKeys("example.com/logbook")
	signer, _ := audit.ParseSignerKey(keys.Signer)
	root, _ := ledger.Root(size, log.node)
	signed, _ := audit.Checkpoint{Origin: "example.com/logbook", Size: size, Root: root}.Sign(signer)
	path, _ := ledger.InclusionProof(2, size, log.node)
	file, _ := audit.NewInclusionProof(3, log.events[2], size, root, path).Encode()

	// The auditor: the verifier key, the signed checkpoint, the proof file.
	verifier, _ := audit.ParseVerifierKey(keys.Verifier)
	cp, err := audit.OpenCheckpoint(signed, verifier)
	if err != nil {
		fmt.Println("checkpoint:", err)
		return
	}
	fmt.Printf("checkpoint: %s, %d events\n", cp.Origin, cp.Size)
	proof, err := audit.DecodeProof(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	trusted := audit.Trusted{Root: cp.Root, Size: cp.Size, SizeKnown: true}
	if _, err := proof.Check(trusted); err == nil {
		fmt.Printf("event %d is in the signed log\n", proof.Seq)
	}

	// The same proof against a checkpoint of only 4 events fails, with a
	// kind a program switches on.
	trusted.Size = 4
	_, err = proof.Check(trusted)
	var p *audit.Problem
	if errors.As(err, &p) {
		switch p.Kind {
		case audit.ProofInvalid:
			fmt.Println("invalid:", p)
		case audit.ProofMalformed:
			fmt.Println("malformed:", p)
		}
	}
	// Output:
	// checkpoint: example.com/logbook, 5 events
	// event 3 is in the signed log
	// invalid: the proof is for a tree of 5 events, the trusted root is of 4
}
