package main

import "github.com/logbook-dev/logbook/audit"

// proofFile is the proof file as the tests read and re-encode it: the
// format moved to package audit, and the tests keep their words.
type proofFile struct{ audit.Proof }

func (p *proofFile) encode() ([]byte, error) { return p.Proof.Encode() }
