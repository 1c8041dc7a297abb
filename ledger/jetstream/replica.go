package jetstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Options configure Open.
type Options struct {
	// Stream is the stream's name (letters, digits, '-', '_'); its one
	// subject is logbook.<Stream>.events.
	Stream string
	// Replicas is how many servers keep the stream; default 3. Fewer than 3
	// is refused unless AllowUnreplicated.
	Replicas          int
	AllowUnreplicated bool
	// Existing: the stream must exist; Open does not create it
	// (ErrNoStream). For a node whose copy already holds events of it.
	Existing bool
	// Timeout bounds one request to the servers; default 5s.
	Timeout time.Duration
	// OpenWait bounds how long Open asks again for the stream when the
	// servers answer nothing (a cluster just started drops the requests
	// it gets before its JetStream leader is elected) or cannot place it
	// yet (starting), and Connect connects again while no server listens;
	// default 30s.
	OpenWait time.Duration
	// ResolveWithin bounds how long an append whose outcome is ambiguous is
	// resolved (read back, resent under the same expected sequence) before
	// it fails with boltstore.ErrAppendUnknown (its events may still appear in
	// the stream; the next catch-up then ingests them), and how long a
	// catch-up the servers do not serve (no answer, a connection being
	// re-established, no leader or one without a quorum) waits for them
	// before it fails (nothing appended); default 30s.
	ResolveWithin time.Duration
	// LeaderWait is how long the stream's leader may stay out of reach
	// through the connection (requests it should answer time out, or the
	// server knows no leader) before the connection is moved to another of
	// its servers; default 10s, past a NATS leader election (4-9s).
	LeaderWait time.Duration
	// SystemConn, if set, is a connection as a system-account user: Open
	// then checks that every server holding the stream syncs always (a
	// minority that does not answer is warned of: see checkSync).
	SystemConn *nats.Conn
	// Logf receives warnings; default the standard logger on stderr.
	Logf func(format string, args ...any)
}

// MaxBatch is the most events one append may carry: the servers' default
// limit on an atomic batch. A store's commit must stay below it
// (boltstore.Options.MaxBatch, with events per call in mind).
const MaxBatch = 1000

var (
	// ErrStreamConfig: the stream exists with settings that lose or rewrite
	// events, or is not a logbook stream.
	ErrStreamConfig = errors.New("stream settings unsafe for a ledger")
	// ErrServerSync: a server holding the stream does not fsync every write.
	ErrServerSync = errors.New("server does not sync always")
	// ErrNoStream: Options.Existing, and the stream does not exist.
	ErrNoStream = errors.New("the stream does not exist")
)

// Replica is a JetStream stream that a boltstore.Store keeps a local copy of
// (boltstore.Options.Replica).
type Replica struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	opts    Options
	subject string
	getSubj string // direct get API subject of the stream
	// msgGetSubj is the message get API subject of the stream, which its
	// leader answers.
	msgGetSubj string
	inbox      string // prefix of the replies to this replica's reads
	replies    *nats.Subscription
	mu         sync.Mutex // one read or append at a time on replies
	// known is the highest seq this replica knows the stream holds (from
	// its acks, conflicts and stream info): a catch-up that reads less from
	// a lagging server waits for it.
	known atomic.Uint64
	// hint is the last sequence a conflict named: what the leader counts,
	// appends proposed but not committed among them. The next catch-up
	// waits for it briefly, never fails for it.
	hint atomic.Uint64
	// hintAt is when (unix ns) the append that got the hint was sent.
	hintAt atomic.Int64
	// lost is when (unix ns) the stream's leader went out of reach through
	// this connection (the first of a run of failed requests, each within
	// Options.LeaderWait of the last, with no append acknowledged since);
	// failed the last failed request's end.
	lost, failed atomic.Int64
	// acked is the last seq of this replica's last append, while the
	// stream acknowledged it and nothing since told of another append;
	// checked is when (unix ns) a catch-up last compared the local head
	// with the stream. See CatchUp.
	acked   atomic.Uint64
	checked atomic.Int64
	// unsafe is the error of the stream's settings as the last stream info
	// fetched (Info: Follow's, every second on a server) showed them, if
	// they could lose or rewrite events; nil while they are safe. CatchUp
	// and Append return it.
	unsafe atomic.Pointer[error]
	// Turns (turn.go): id names this replica in its requests for a turn;
	// turns receives the others'; yieldTo is until when (unix ns) the
	// next catch-up waits, another node having asked; refusedRun counts
	// this replica's appends refused in a row for others'; askedAt is
	// when it last asked.
	id         string
	turns      *nats.Subscription
	yieldTo    atomic.Int64
	refusedRun atomic.Int32
	askedAt    atomic.Int64
	reqID      uint64
	hooks      hooks // set by tests only
}

// hooks let tests damage what a replica reads and lose what it sends.
type hooks struct {
	// tamper edits a message's data as it is read.
	tamper func(seq uint64, data []byte) []byte
	// lose tells, per publish attempt, whether the batch is not sent at
	// all or sent with its answer lost (both seen as a timeout).
	lose func(attempt int) (unsent, unanswered bool)
	// refuse, per publish attempt, answers in the servers' stead without
	// sending the batch, if it returns an error.
	refuse func(attempt int, expected uint64) error
	// sleep stands in for the pause between an append's attempts.
	sleep func(time.Duration)
	// lax skips the stream settings check at Open.
	lax bool
	// trace receives what the replica does (requests, their outcomes,
	// reconnects), to explain a fault's timeline.
	trace func(format string, args ...any)
}

// tracef reports to the trace hook, if any.
func (r *Replica) tracef(format string, args ...any) {
	if r.hooks.trace != nil {
		r.hooks.trace(format, args...)
	}
}

var streamName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Subject is the one subject of the stream named name.
func Subject(name string) string { return "logbook." + name + ".events" }

// Open creates the stream (or checks the existing one; with
// Options.Existing only the latter) on the servers nc is connected to and
// returns it as a Replica.
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Replica, error) {
	return open(ctx, nc, opts, hooks{})
}

func open(ctx context.Context, nc *nats.Conn, opts Options, h hooks) (*Replica, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	r := &Replica{nc: nc, js: js, opts: opts, subject: Subject(opts.Stream),
		getSubj: "$JS.API.DIRECT.GET." + opts.Stream, msgGetSubj: "$JS.API.STREAM.MSG.GET." + opts.Stream, inbox: nc.NewRespInbox(), hooks: h}
	if r.replies, err = nc.SubscribeSync(r.inbox + ".*"); err != nil {
		return nil, err
	}
	r.replies.SetPendingLimits(-1, -1)
	// The rights first: a user denied them left a new stream made and
	// empty (a migrate refused after it created the stream).
	if err := r.checkRights(); err != nil {
		r.replies.Unsubscribe()
		return nil, err
	}
	info, err := r.ensureStream(ctx)
	if err == nil {
		err = r.checkSync(ctx, info)
	}
	if err != nil {
		r.replies.Unsubscribe()
		return nil, err
	}
	r.id = nuid.Next()
	if err := r.listenTurns(); err != nil {
		r.replies.Unsubscribe()
		return nil, err
	}
	r.known.Store(info.State.LastSeq)
	return r, nil
}

// check says what is wrong with the stream o names, before any server is
// asked (Connect checks it before it dials: a name JetStream refuses was
// known only once a server answered, after up to OpenWait of retries
// while none did): a name other than 1-64 letters, digits, '-' or '_', or
// fewer replicas than 1, or than 3 without AllowUnreplicated, or more
// than NATS allows (the servers said so only once they answered). Zero
// Replicas is the default, 3.
func (o Options) check() error {
	if !streamName.MatchString(o.Stream) {
		return fmt.Errorf("stream name %q: want 1-64 letters, digits, '-' or '_'", o.Stream)
	}
	switch o = o.withDefaults(); {
	case o.Replicas < 1:
		return fmt.Errorf("%w: %d replicas; a stream is kept by at least 1 server", ErrStreamConfig, o.Replicas)
	case o.Replicas > maxReplicas:
		return fmt.Errorf("%w: %d replicas; NATS keeps a stream on at most %d servers", ErrStreamConfig, o.Replicas, maxReplicas)
	case o.Replicas < 3 && !o.AllowUnreplicated:
		return fmt.Errorf("%w: %d replicas; a ledger needs 3 or more (AllowUnreplicated, --allow-unreplicated, to accept fewer)", ErrStreamConfig, o.Replicas)
	}
	return nil
}

// maxReplicas is the most servers NATS keeps a stream on (its
// StreamMaxReplicas): a stream asked for more is refused by the servers.
const maxReplicas = 5

// withDefaults is o with the default of each setting left zero.
func (o Options) withDefaults() Options {
	if o.Replicas == 0 {
		o.Replicas = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.OpenWait <= 0 {
		o.OpenWait = 30 * time.Second
	}
	if o.ResolveWithin <= 0 {
		o.ResolveWithin = 30 * time.Second
	}
	if o.LeaderWait <= 0 {
		o.LeaderWait = 10 * time.Second
	}
	if o.Logf == nil {
		logger := log.New(os.Stderr, "", log.LstdFlags)
		o.Logf = logger.Printf
	}
	return o
}

// Close stops the replica's reads. The connection stays the caller's.
func (r *Replica) Close() error {
	return errors.Join(r.replies.Unsubscribe(), r.turns.Unsubscribe())
}

// streamConfig is the stream a ledger needs.
func (r *Replica) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:               r.opts.Stream,
		Description:        "logbook ledger: stream sequence = ledger seq",
		Subjects:           []string{r.subject},
		Retention:          jetstream.LimitsPolicy,
		MaxConsumers:       -1,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxMsgsPerSubject:  -1,
		Discard:            jetstream.DiscardNew,
		Storage:            jetstream.FileStorage,
		Replicas:           r.opts.Replicas,
		DenyDelete:         true,
		DenyPurge:          true,
		AllowDirect:        true,
		AllowAtomicPublish: true,
		Metadata:           map[string]string{"logbook": "ledger"},
	}
}

// ensureStream creates the stream, or checks the one that exists. A
// request the servers leave unanswered, or refuse as a cluster still
// starting does (starting), is asked again, each time waiting twice as
// long (from 1s up to Timeout), for up to OpenWait: a cluster that has
// just started drops what it gets before its JetStream leader is elected,
// then refuses to place a stream until enough of its servers have joined,
// and the same request sent a moment later is answered at once.
func (r *Replica) ensureStream(ctx context.Context) (*jetstream.StreamInfo, error) {
	giveUp := time.Now().Add(r.opts.OpenWait)
	var s jetstream.Stream
	var err error
	noJetStream := false // whether no server took a request (ErrNoResponders)
	for wait := time.Second; ; wait = min(2*wait, r.opts.Timeout) {
		sent := time.Now()
		s, err = r.lookupOrCreate(ctx, wait)
		if unanswered(err) {
			if d := r.denied(); d != nil {
				// Unanswered because the request, or its answer, was
				// denied: asking again cannot help.
				err = d
			}
		}
		if err == nil || !(unanswered(err) || starting(err)) || ctx.Err() != nil || time.Now().After(giveUp) {
			break
		}
		why := "a cluster still starting answers nothing, or cannot place a stream yet"
		if errors.Is(err, nats.ErrNoResponders) {
			noJetStream = true
			why = "no server runs JetStream for this user's account: still starting, or not enabled"
		}
		r.opts.Logf("stream %s: %v (%s); asking again", r.opts.Stream, err, why)
		// An answer at once (a refusal while the cluster starts; no
		// responders, at once too) pauses before asking again: asked
		// again at once, it was asked some 200,000 times a second, each
		// logged, for OpenWait.
		select {
		case <-ctx.Done():
		case <-time.After(wait/4 - time.Since(sent)):
		}
	}
	if err != nil && noJetStream {
		return nil, fmt.Errorf("stream %s: %w (no server ran JetStream for this user's account within %v: enable it on the NATS servers, jetstream { … }, and for the account, jetstream: enabled)",
			r.opts.Stream, err, r.opts.OpenWait)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", r.opts.Stream, err)
	}
	r.stream = s
	info := s.CachedInfo()
	if r.hooks.lax {
		return info, nil
	}
	if err := r.checkConfig(info.Config); err != nil {
		return nil, err
	}
	if err := checkState(info.State); err != nil {
		return nil, fmt.Errorf("stream %s: %w", r.opts.Stream, err)
	}
	return info, nil
}

// lookupOrCreate looks the stream up, waiting at most wait for the answer,
// and creates it if there is none (another node may create it first).
func (r *Replica) lookupOrCreate(ctx context.Context, wait time.Duration) (jetstream.Stream, error) {
	lctx, cancel := context.WithTimeout(ctx, wait)
	s, err := r.js.Stream(lctx, r.opts.Stream)
	cancel()
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return s, err
	}
	if r.opts.Existing {
		return nil, ErrNoStream
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	s, err = r.js.CreateStream(cctx, r.streamConfig())
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		s, err = r.js.Stream(cctx, r.opts.Stream)
	}
	return s, err
}

// unanswered reports whether err is the servers not answering (yet), as
// opposed to an answer that refuses: a request timed out, no server took
// it, or the connection dropped with it in flight (nats.go reconnects and
// sends what it buffered meanwhile).
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrReconnectBufExceeded)
}

// starting reports whether err is an answer a JetStream cluster gives
// while it starts: no suitable peers for placement (10005: fewer servers
// have joined than the stream's replicas) or JetStream temporarily
// unavailable (10008: no metadata leader yet). Both were seen in about one
// cold start of a 3-server cluster in ten, by every node starting with it.
func starting(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrNoPeers || apiErr.ErrorCode == jsErrNotAvailable)
}

// The servers' error codes (nats-server's JSClusterNoPeersErrF and
// JSClusterNotAvailErr) that starting accepts; nats.go names neither.
const (
	jsErrNoPeers      jetstream.ErrorCode = 10005
	jsErrNotAvailable jetstream.ErrorCode = 10008
)

// checkConfig refuses a stream whose settings could lose, reorder or rewrite
// events.
func (r *Replica) checkConfig(c jetstream.StreamConfig) error {
	var bad []string
	check := func(ok bool, what string) {
		if !ok {
			bad = append(bad, what)
		}
	}
	check(len(c.Subjects) == 1 && c.Subjects[0] == r.subject, fmt.Sprintf("subjects %v, want [%s]", c.Subjects, r.subject))
	check(c.Storage == jetstream.FileStorage, "storage is not file")
	check(c.Replicas >= 3 || (r.opts.AllowUnreplicated && c.Replicas >= 1), fmt.Sprintf("%d replicas", c.Replicas))
	check(c.DenyDelete, "deletes allowed (deny_delete off)")
	check(c.DenyPurge, "purges allowed (deny_purge off)")
	check(c.Retention == jetstream.LimitsPolicy, "retention is not limits (messages would be removed once consumed)")
	check(c.MaxAge == 0, "max_age set")
	check(c.MaxMsgs <= 0, "max_msgs set")
	check(c.MaxBytes <= 0, "max_bytes set")
	check(c.MaxMsgsPerSubject <= 0, "max_msgs_per_subject set")
	check(c.MaxMsgSize <= 0, "max_msg_size set (larger events refused)")
	check(!c.Sealed, "sealed (it takes no more appends, and is never unsealed: logbook migrate a node's copy into a new stream to go on)")
	check(!c.AllowRollup, "rollups allowed")
	check(!c.AllowMsgTTL && c.SubjectDeleteMarkerTTL == 0, "message TTLs allowed")
	check(!c.AllowMsgCounter, "a counter stream")
	check(!c.AllowMsgSchedules, "message schedules allowed")
	check(c.PersistMode == jetstream.DefaultPersistMode, "async persistence")
	check(c.Mirror == nil && len(c.Sources) == 0 && c.SubjectTransform == nil, "mirrored, sourced or transformed")
	check(c.FirstSeq <= 1, fmt.Sprintf("first_seq %d", c.FirstSeq))
	check(!c.NoAck, "no_ack set")
	check(c.AllowAtomicPublish, "atomic batches not allowed (allow_atomic off)")
	check(c.AllowDirect, "direct gets not allowed (allow_direct off)")
	if len(bad) > 0 {
		return fmt.Errorf("%w: stream %s: %v", ErrStreamConfig, c.Name, bad)
	}
	return nil
}

// checkState refuses a stream whose messages are not 1..last without gaps:
// its sequence could not be the ledger's.
func checkState(s jetstream.StreamState) error {
	switch {
	case s.Msgs == 0 && s.LastSeq == 0:
		return nil
	case s.FirstSeq != 1 || s.Msgs != s.LastSeq || s.NumDeleted != 0:
		return fmt.Errorf("%w: messages %d..%d (%d held, %d deleted); a ledger's run from 1 without a gap",
			ErrStreamConfig, s.FirstSeq, s.LastSeq, s.Msgs, s.NumDeleted)
	}
	return nil
}

// Info is the stream's state as its leader reports it.
func (r *Replica) Info(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	sent := time.Now()
	info, err := r.stream.Info(ctx)
	if info != nil && info.Cluster != nil {
		r.tracef("info via %s: leader %q quorum %v, %v in %v", r.nc.ConnectedServerName(), info.Cluster.Leader, quorumCurrent(info), err, time.Since(sent).Round(time.Millisecond))
	} else {
		r.tracef("info via %s: %v in %v", r.nc.ConnectedServerName(), err, time.Since(sent).Round(time.Millisecond))
	}
	if err == nil && !r.hooks.lax {
		r.noteConfig(info.Config)
	}
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded):
		// The caller gave up: that says nothing of the servers.
	case errors.Is(err, jetstream.ErrStreamNotFound):
		// An answer: the stream was deleted.
	case err != nil || (info.Cluster != nil && info.Cluster.Leader == "") || !quorumCurrent(info):
		// (A server answering as the leader of a copy that a majority no
		// longer follows is cut off: it steps down 10-20s later.)
		r.leaderLost(sent)
	}
	return info, err
}

// noteConfig checks the stream's settings as a stream info showed them,
// while the node runs: Open checked them once; an operator may edit them
// since. Unsafe ones stop the replica's appends and catch-ups until they
// are restored; each change is logged.
func (r *Replica) noteConfig(c jetstream.StreamConfig) {
	if err := r.checkConfig(c); err != nil {
		err = fmt.Errorf("%w: %w (changed while this node ran: it appends and catches up nothing until they are restored)", boltstore.ErrLogUnsafe, err)
		if r.unsafe.Swap(&err) == nil {
			r.opts.Logf("%v", err)
		}
		return
	}
	if r.unsafe.Swap(nil) != nil {
		r.opts.Logf("stream %s: its settings are safe again", r.opts.Stream)
	}
}

// unsafeErr is the error of unsafe stream settings, if the last stream
// info showed them.
func (r *Replica) unsafeErr() error {
	if err := r.unsafe.Load(); err != nil {
		return *err
	}
	return nil
}

// leaderAnswered notes that the stream's leader acknowledged an append
// through this connection: a quorum of servers is reachable. (Nothing
// short of that tells: a server cut off from the others may still believe
// it leads the stream, and answer reads and refusals from its stale copy.)
func (r *Replica) leaderAnswered() { r.lost.Store(0) }

// leaderLost notes a request sent at sent that the stream's leader did
// not answer (a timeout, no responders, a server without a leader). Once
// the leader has been out of reach for Options.LeaderWait, the connection
// is moved to another of its servers: the one it holds may be cut off from
// the rest of the cluster (partitioned), where it stays up, answers reads
// from its stale copy and never reaches the leader the others elected,
// while the client sees a healthy connection and would never leave it.
func (r *Replica) leaderLost(sent time.Time) {
	now := time.Now().UnixNano()
	if prev := r.failed.Swap(now); time.Duration(now-prev) > r.opts.LeaderWait {
		r.lost.Store(0) // the last failure is long past: a new run
	}
	r.lost.CompareAndSwap(0, sent.UnixNano())
	since := r.lost.Load()
	server := cmp.Or(r.nc.ConnectedServerName(), "(none: disconnected)")
	if since == 0 || time.Duration(now-since) < r.opts.LeaderWait || !r.lost.CompareAndSwap(since, now) {
		r.tracef("leader lost through %s since %v ago", server, time.Duration(now-since).Round(time.Millisecond))
		return
	}
	r.opts.Logf("stream %s: no leader answered through server %s for %v: moving to another server",
		r.opts.Stream, server, time.Duration(now-since).Round(time.Millisecond))
	if err := r.nc.ForceReconnect(); err != nil {
		r.opts.Logf("stream %s: reconnect: %v", r.opts.Stream, err)
	}
}

var _ boltstore.Replica = (*Replica)(nil)

// Name is the stream's name (boltstore.Replica): a local copy's marker
// keeps it.
func (r *Replica) Name() string { return r.opts.Stream }
