package boltstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// A file recovered after a stopped machine (a journal generation
// under way, its pages kept, lost or torn) is not called damaged either
// (soundChecks, soundcheck_test.go). Linux: the journal is Linux's.
func TestSoundFilesAfterPowerLoss(t *testing.T) {
	l, path, checkpoint := journaled(t, Options{Hold: true})
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 90 {
		if err := randomCommit(rng, l, i); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	soundChecks(t, l, "with a generation under way")
	for round := range 4 {
		setBoot(t, fmt.Sprintf("boot-after-%d", round))
		img := powerLoss(t, rng, checkpoint, path, t.TempDir())
		r, err := Open(img, Options{})
		if err != nil {
			t.Fatalf("round %d: recover: %v", round, err)
		}
		soundChecks(t, r, fmt.Sprintf("round %d: recovered", round))
		if _, err := r.Verify(context.Background(), VerifyOptions{}); err != nil {
			t.Fatalf("round %d: verify after recovery: %v", round, err)
		}
		r.Close()
		soundFile(t, img, fmt.Sprintf("round %d: recovered, closed", round))
	}
	setBoot(t, mustBoot(t))
}
