package jetstream

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Turns. Compare-and-append alone does not share the stream between
// nodes: a node whose own append was the last one decides its next at once
// (it needs no read), while a node refused for it must first read and fold
// what it missed, then decide. Under load its window from read to append is
// longer than the busy node's interval between appends, and it lost every
// retry of a commit (boltstore's ErrHeadMoved, 64 times: the call is
// ERR_STORAGE) for seconds at a time. So a node refused turnAfter times in a
// row asks the others for a turn on a plain NATS subject beside the stream
// (not stored in it); each other node's next catch-up then waits until
// turnFor after the request, and reads the stream. Requests are advisory: a
// user not allowed the subject only loses the fairness.
const (
	turnAfter = 8
	turnFor   = 50 * time.Millisecond
)

// turnSubject is the subject on which the nodes of stream name ask for turns.
func turnSubject(name string) string { return "logbook." + name + ".turn" }

// probePrefix begins the message a replica sends itself on the turn
// subject at Open, to learn whether its user may use it; no request.
const probePrefix = "probe "

// probeWait bounds how long Open waits for its probe to come back: a
// round trip through its own server, milliseconds.
const probeWait = time.Second

// listenTurns subscribes to the other nodes' requests for a turn, and
// checks that the subscription hears what this replica publishes there:
// a user denied the subject (publish or subscribe) is told only by an
// asynchronous error from the server, its calls unaffected, and would go
// without turns unseen. It logs a warning then; it never fails.
func (r *Replica) listenTurns() (err error) {
	subj := turnSubject(r.opts.Stream)
	probe := probePrefix + r.id
	heard := make(chan struct{}, 1)
	r.turns, err = r.nc.Subscribe(subj, func(m *nats.Msg) {
		switch data := string(m.Data); {
		case data == probe:
			select {
			case heard <- struct{}{}:
			default:
			}
		case data != r.id && !strings.HasPrefix(data, probePrefix):
			r.yieldTo.Store(time.Now().Add(turnFor).UnixNano())
		}
	})
	if err != nil {
		return err
	}
	perr := r.nc.Publish(subj, []byte(probe))
	if perr == nil {
		select {
		case <-heard:
			return nil
		case <-time.After(probeWait):
			perr = fmt.Errorf("what it published there did not come back within %v", probeWait)
		}
	}
	r.opts.Logf("WARNING: stream %s: this node takes no turns with the others on %s (%v): its NATS user may not be allowed to publish and subscribe on it. Calls go on; without turns a busy node can keep a slower one from appending (ERR_STORAGE after its retries): allow the subject to the logbook user.",
		r.opts.Stream, subj, perr)
	return nil
}

// refused notes an append of this replica refused for another node's
// (ErrHeadMoved): after turnAfter in a row, it asks the others for a turn,
// at most once per turnFor.
func (r *Replica) refused() {
	if r.refusedRun.Add(1) < turnAfter {
		return
	}
	now := time.Now().UnixNano()
	if last := r.askedAt.Load(); time.Duration(now-last) < turnFor || !r.askedAt.CompareAndSwap(last, now) {
		return
	}
	r.tracef("asking for a turn after %d refusals", r.refusedRun.Load())
	r.nc.Publish(turnSubject(r.opts.Stream), []byte(r.id)) // advisory: an error only loses the turn
}

// yield waits while another node asked for a turn, and reports whether it
// did (the caller then reads the stream: the other node may have appended).
func (r *Replica) yield() bool {
	until := r.yieldTo.Swap(0)
	if until == 0 {
		return false
	}
	// What is left of the turn: none, if it is over (then sleep returns
	// at once, and the caller still reads the stream).
	d := max(time.Until(time.Unix(0, until)), 0)
	r.tracef("yielding %v", d.Round(time.Millisecond))
	r.sleep(d)
	return true
}
