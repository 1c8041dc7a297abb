//go:build race

package jetstream

// raceDetector: the tests run under the race detector.
const raceDetector = true
