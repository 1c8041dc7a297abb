package boltaudit

// SetMaxProofEvent sets the largest event, in base64, an inclusion proof
// may hold, and returns what puts the limit back.
func SetMaxProofEvent(n int) (restore func()) {
	old := maxProofEvent
	maxProofEvent = n
	return func() { maxProofEvent = old }
}
