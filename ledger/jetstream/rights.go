package jetstream

import (
	"errors"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go"
)

// ErrDenied: the servers deny the NATS user a subject the ledger needs
// (boltstore.ErrLogDenied: the commands say so, and that nothing of the
// call was recorded).
var ErrDenied = boltstore.ErrLogDenied

// Rights. A server denying a client a subject (its user's permissions)
// drops what the client publishes there, or subscribes it to nothing, and
// tells it only by an asynchronous error: a request there goes unanswered
// until it times out. A node whose user may not publish on the stream's
// subject then started, and every call waited out ResolveWithin (30s)
// before it was said to be unknown (ERR_STORAGE: may have been recorded),
// though nothing could land; denied the stream's API, a node retried its
// start for OpenWait and exited saying only that time was up. So Open
// checks what a ledger needs, and a request left unanswered at Open is
// checked for a denial (ErrDenied, naming the subject). So is a request
// left unanswered later (deniedSince): rights taken away while a node runs
// (the servers' configuration reloaded) fail its next append or read at
// its first unanswered request, not after ResolveWithin as an append
// whose outcome is unknown — the servers dropped it, nothing landed.
// (A subscription taken away, the answers', is said once, when it is
// removed, and is not told apart from servers that do not answer.)

// expectedStream is the header with which a publish names the stream it is
// meant for: one that names another is refused unstored. Open's probe of
// the stream's subject names no stream at all ("logbook probe": a stream
// name holds no space).
const (
	hdrExpectedStream = "Nats-Expected-Stream"
	probeStream       = "logbook probe"
)

// needs says what a ledger node's NATS user must be allowed, for ErrDenied.
func needs(stream string) string {
	return fmt.Sprintf("allow its user to publish to %s, %s and $JS.API.> (the stream's API), and to subscribe to _INBOX.> (answers)",
		Subject(stream), turnSubject(stream))
}

// denied is ErrDenied if the last error the servers sent on the connection
// is a permissions violation naming one of subjects (any, if none is
// given); else nil. The servers send it before they answer anything sent
// after the denied publish or subscription: call it after a flush (or an
// unanswered request) that followed them.
func (r *Replica) denied(subjects ...string) error {
	return r.deniedBy(r.nc.LastError(), subjects...)
}

// deniedSince is err, the failure of a request sent on subject, unless
// the request went unanswered and the servers said since it was sent
// (before: the connection's LastError then) that subject is denied: then
// that denial (ErrDenied), nothing of the request stored. Each violation
// nats.go reports is a new *fmt.wrapError, so == tells one from before the
// request (a right since given back) from a new one.
func (r *Replica) deniedSince(err, before error, subject string) error {
	last := r.nc.LastError()
	if !unanswered(err) || !errors.Is(last, nats.ErrPermissionViolation) || last == before {
		return err
	}
	if d := r.deniedBy(last, subject); d != nil {
		return fmt.Errorf("stream %s: %w", r.opts.Stream, d)
	}
	return err
}

// deniedBy is ErrDenied if err is a permissions violation naming one of
// subjects (any, if none is given); else nil.
func (r *Replica) deniedBy(err error, subjects ...string) error {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	named := len(subjects) == 0
	for _, s := range subjects {
		named = named || strings.Contains(err.Error(), `"`+s+`"`)
	}
	if !named {
		return nil
	}
	return fmt.Errorf("%w (the NATS servers said: %v): %s", ErrDenied, err, needs(r.opts.Stream))
}

// checkRights checks that the servers let the connection's user take the
// answers to this replica's reads (r.replies, subscribed), append to the
// stream and read it: each is tried, then the connection flushed, after
// which a denial has arrived. The append tried names another stream
// (probeStream), which the stream refuses without storing it; the reads
// have no reply subject, which the servers do not answer. (The turn
// subject is listenTurns' to check: it is advisory.)
func (r *Replica) checkRights() error {
	if err := r.flushed(r.inbox + ".*"); err != nil {
		return err
	}
	probe := nats.NewMsg(r.subject)
	probe.Header.Set(hdrExpectedStream, probeStream)
	if err := r.nc.PublishMsg(probe); err != nil {
		return err
	}
	if err := r.flushed(r.subject); err != nil {
		return err
	}
	for _, subj := range []string{r.getSubj, r.msgGetSubj} {
		if err := r.nc.Publish(subj, nil); err != nil {
			return err
		}
		if err := r.flushed(subj); err != nil {
			return err
		}
	}
	return nil
}

// flushed flushes the connection and reports a denial of subject. A flush
// that fails (the connection dropped, nats.go reconnecting) tells nothing:
// it is logged, and the node starts as it would without the check.
func (r *Replica) flushed(subject string) error {
	if err := r.nc.FlushTimeout(r.opts.Timeout); err != nil {
		r.opts.Logf("stream %s: could not check that the NATS user may use %s: %v", r.opts.Stream, subject, err)
		return nil
	}
	if err := r.denied(subject); err != nil {
		return fmt.Errorf("stream %s: %w", r.opts.Stream, err)
	}
	return nil
}
