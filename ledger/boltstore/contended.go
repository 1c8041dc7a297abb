package boltstore

// Contended reports whether anything may be waiting for the file this
// Store commits to: another process that says it waits (want_linux.go), or
// a call of this process queued for the committer. It says true where it
// cannot tell: without waiters' signals (not Linux), outside a commit, and
// for a Store holding its file (Options.Hold), whose own calls share every
// commit. Long work done in steps (a rebuild's chunks), called inside one
// of them, takes bigger steps while it says false.
func (l *Store) Contended() bool {
	if !wantSignals || l.held != nil || len(l.queue) > 0 {
		return true
	}
	_, file, done := l.shared.borrow()
	if file == nil {
		return true
	}
	defer done()
	return othersWant(file)
}
