package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/skills"
)

// Call is one request to the service, as a transport received it.
type Call struct {
	// Name is what the caller called (an MCP tool name, an HTTP route…),
	// recorded in tool.called; it may name nothing the service knows.
	Name string
	// Command is what to run; nil if Name names no command (the call is
	// then recorded as invalid input).
	Command *Command
	Args    json.RawMessage // the raw arguments as received; hashed canonically into tool.called
	Client  string          // the client's name for itself ("" if unknown)
	// Actor, when set, is the caller as a credential proved it (server mode:
	// a bearer token's agent). It is the actor of every event of the call,
	// whatever Options.Agent or the client says; Client is then recorded in
	// tool.called only as an unverified claim, beside Token.
	Actor string
	Token string // the hex SHA-256 of the credential that proved Actor
	// ReadOnly: the caller may not change state (a read-only token); a
	// mutating command with valid arguments is refused with ErrReadOnly,
	// and server_health reports mode READONLY to it.
	ReadOnly bool
	// Invalid, when non-nil, is the edge's rejection of the arguments (schema,
	// UTF-8, unknown tool): Do records the call with this error and runs nothing.
	Invalid error
	// Encode turns the call's outcome into the outcome code written to the
	// tool.called event ("OK" or an ERR_* code) and the exact reply bytes sent
	// to the client (whose SHA-256 is written too). The edge owns both.
	Encode func(result any, err error) (code string, reply []byte)
}

// Options configure a Service.
type Options struct {
	Agent    string // identity bound at launch; "" means the MCP client's name
	Project  string // default project of task_next_actions
	ReadOnly bool   // refuse mutating tools with ErrReadOnly
	Skills   *skills.Set
	Skipped  []events.SkippedSkill // skill files that failed to load
	Version  string                // the binary's version, for server_health
	Logger   *slog.Logger
	// Now is the clock tool.called durations are measured with; default
	// time.Now. Tests fix it so that a ledger they build is the same bytes,
	// hashes included, on every run.
	Now func() time.Time
	// HeldBy, if set, says who holds the ledger file when a commit timed
	// out waiting for it ("" if it cannot tell): the reason an agent reads.
	HeldBy func() string
	// LedgerTokens: Call.Token names a token of the ledger's tokens
	// projection (logbook server). A call is then refused (*TokenRevokedError)
	// if, when it commits, that token is revoked: the edge checked it when
	// the request came, but the call may wait for the file while a
	// revocation commits, and no event may follow a token's revocation
	// under it.
	LedgerTokens bool
}

// Service runs tool calls against the ledger.
type Service struct {
	l       *boltstore.Store
	opts    Options
	started time.Time
	log     *slog.Logger

	// The skills.loaded record goes into the first committed call, when the
	// actor is known; firstMu keeps concurrent first calls from writing it twice.
	firstMu   sync.Mutex
	firstDone bool

	failLog *rateLimit // commit failures logged at most once a second

	// readMu: one read transaction at a time on a shared file (read.go),
	// shared with the process's guests.
	readMu *sync.Mutex
	// refolding: one refold of missing projections at a time (refold.go),
	// shared with the process's guests.
	refolding *refolding
	// trees bounds the memory of the calls' argument trees in flight,
	// shared with the process's guests.
	trees *trees
	// lockWait: how long a call waits for the file lock; 0, the Store's.
	// A guest's is its own process's (GuestOptions.LockTimeout).
	lockWait time.Duration

	// remote, when set, runs this process's calls in another process that
	// holds the ledger (remote.go).
	remote atomic.Pointer[Remote]
}

// ErrInternal is what an unexpected failure becomes at the edge: Do has
// already logged its cause, which is never sent.
var ErrInternal = errors.New("internal error")

// New brings the projections up to date — rebuilding them from the log if
// they were built by another projection version — and returns a Service.
func New(l *boltstore.Store, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{l: l, opts: opts, started: time.Now(), log: opts.Logger, failLog: &rateLimit{}, readMu: &sync.Mutex{}, refolding: &refolding{},
		trees: newTrees()}
	if _, err := Rebuild(l, projections.RebuildOptions{Progress: s.progress}); err != nil {
		return nil, err
	}
	return s, nil
}

// Rebuild brings the projections in the file up to the log's head. With
// opts.Force, or when the stored projection version differs from the binary's
// (or none is stored), it refolds the whole log into a scratch file, in
// chunks, while other processes keep working on the live projections, then
// puts the result in their place in one short hold of the file, reusing
// their pages (projections.Rebuild): a rebuild does not grow the file.
func Rebuild(l *boltstore.Store, opts projections.RebuildOptions) (projections.Rebuilt, error) {
	var need bool
	var head, applied uint64
	err := l.View(func(tx *boltstore.Tx) error {
		var err error
		need, err = projections.NeedsRebuild(tx)
		_, applied, _ = projections.State(tx)
		head = tx.Head().Seq
		return err
	})
	if err != nil {
		return projections.Rebuilt{}, fmt.Errorf("projections: %w", err)
	}
	if !opts.Force && !need {
		if applied == head {
			return projections.Rebuilt{Applied: applied}, nil
		}
		// Behind (events of an interrupted process): fold them in one go.
		err := l.Update(func(tx *boltstore.Tx) error {
			_, err := projections.CatchUp(tx, 0)
			_, applied, _ = projections.State(tx)
			return err
		})
		return projections.Rebuilt{Applied: applied}, err
	}
	// Dropped, the projections' pages are freed: a page another tree
	// still uses (a damaged file) would be written over next, and the file
	// read by nothing after. Opening checked only the trees' roots.
	if err := l.CheckPages(); err != nil {
		return projections.Rebuilt{}, err
	}
	res, err := projections.Rebuild(l, opts)
	if err != nil {
		return res, fmt.Errorf("rebuild projections: %w", err)
	}
	return res, nil
}

// Tx is one call's view of the ledger transaction: it appends events as the
// service's actor and folds them into the projections.
type Tx struct {
	lt       *boltstore.Tx
	actor    string
	readOnly bool // the caller may not change state (Call.ReadOnly)
	emitted  int
}

// emit appends one domain event and folds it.
func (tx *Tx) emit(typ string, subjects []string, payload any) (ledger.Record, error) {
	b, err := ledger.EncodePayload(payload)
	if err != nil {
		return ledger.Record{}, err
	}
	rec, err := tx.lt.Append(ledger.Event{Type: typ, Version: events.CurrentVersion(typ), Actor: tx.actor, Subjects: subjects, Payload: b})
	if err != nil {
		return rec, err
	}
	tx.emitted++
	return rec, projections.Apply(tx.lt, rec)
}

// rejected carries a domain error raised after the handler had emitted
// events: the commit is rolled back and the call recorded alone.
type rejected struct{ err error }

func (r *rejected) Error() string { return r.err.Error() }

// Do runs one tool call as one atomic, durable commit: the domain events it
// decides plus exactly one tool.called event. It returns the reply bytes
// produced by call.Encode once the commit is durable. A non-nil error means
// the commit failed (errors.Is(err, ErrStorage)) and nothing of the call is in
// the ledger — unless a *StorageError says its outcome is Unknown: the call
// went to another process (SetRemote) that never answered, the disk failed
// while the commit was made durable (boltstore.ErrOutcomeUnknown), or the
// replicated log neither took nor refused its events
// (boltstore.ErrAppendUnknown); reply is nil either way. A call that finds the file holding no projections (a
// rebuild cut off) folds them again from the log and runs once more
// (refold.go).
func (s *Service) Do(ctx context.Context, call Call) (reply []byte, err error) {
	if r := s.remote.Load(); r != nil && call.Actor == "" {
		if reply, sent, err := s.forward(ctx, *r, call); sent {
			return reply, err
		}
	}
	return s.do(ctx, call, nil)
}

// do is Do in this process. With first non-nil (a guest's call, remote.go),
// *first says whether the caller's skills.loaded record is still to be
// written: the call writes it if so, and clears *first once it is durable.
func (s *Service) do(ctx context.Context, call Call, first *bool) (reply []byte, err error) {
	start := s.opts.Now()
	actor := s.actor(call)
	// The arguments are parsed here, once: their tree is validated, decoded
	// into the command's input and hashed. What tool.called records of
	// them, and what the domain's rules say of them, depends on them
	// alone: worked out here, not in the commit that calls queue for. The
	// tree is held within the process's bound (trees) until the call is
	// answered — or, refused, until it is checked: what is recorded of it
	// needs it no more.
	held := s.trees.hold(treeWeight(len(call.Args)))
	defer held.release()
	args := readArgs(call)
	if args.invalid != nil {
		args.parsed = nil
		held.release()
	}
	if s.readsAside(call, first) {
		if reply, handled, err := s.doRead(ctx, call, actor, args, start); handled {
			return reply, err
		}
	}
	var firstPending bool
	if first != nil {
		firstPending = *first
	} else {
		if !s.first() {
			s.firstMu.Lock()
			defer s.firstMu.Unlock()
		}
		firstPending = !s.firstDone
	}
	wroteFirst := false
	body := func(lt *boltstore.Tx) error {
		tx := &Tx{lt: lt, actor: actor, readOnly: call.ReadOnly}
		if _, err := projections.CatchUp(lt, 0); err != nil {
			return err
		}
		revoked, err := s.tokenRevoked(lt, call)
		if err != nil {
			return err
		}
		wroteFirst = firstPending && !revoked
		if wroteFirst {
			if _, err := tx.emit(events.TypeSkillsLoaded, nil, s.opts.Skills.Loaded(s.opts.Skipped)); err != nil {
				return err
			}
		}
		var result any
		var herr error
		switch {
		case revoked:
			herr = &TokenRevokedError{Tool: call.Name}
		case call.Invalid != nil:
			herr = call.Invalid
		default:
			before := tx.emitted
			result, herr = s.dispatch(ctx, tx, call, args)
			if herr != nil && isDomain(herr) && tx.emitted > before {
				return &rejected{herr}
			}
			if herr != nil && !isDomain(herr) {
				return herr
			}
		}
		return s.record(tx, call, args, start, result, herr, &reply)
	}
	err = s.update(ctx, func(lt *boltstore.Tx) error {
		err := body(lt)
		var rej *rejected
		if err != nil && !errors.As(err, &rej) {
			return &funcError{err}
		}
		return err
	})
	var rej *rejected
	switch {
	case err == nil:
		if wroteFirst && first == nil {
			s.firstDone = true
		} else if wroteFirst {
			*first = false
		}
		return reply, nil
	case errors.As(err, &rej):
		err = rej.err
	case isStorage(err), errors.Is(err, boltstore.ErrDamaged), errors.Is(err, projections.ErrVersionChanged):
		return nil, s.storageError(call.Name, err)
	default:
		s.logInternal(call.Name, err)
		err = ErrInternal
	}
	// Record the call alone, with its error.
	herr := err
	err = s.update(ctx, func(lt *boltstore.Tx) error {
		tx := &Tx{lt: lt, actor: actor}
		if _, err := projections.CatchUp(lt, 0); err != nil {
			return &funcError{err}
		}
		herr := herr
		if revoked, err := s.tokenRevoked(lt, call); err != nil {
			return &funcError{err}
		} else if revoked {
			herr = &TokenRevokedError{Tool: call.Name}
		}
		if err := s.record(tx, call, args, start, nil, herr, &reply); err != nil {
			return &funcError{err}
		}
		return nil
	})
	switch {
	case err == nil:
		return reply, nil
	case isStorage(err), errors.Is(err, boltstore.ErrDamaged), errors.Is(err, projections.ErrVersionChanged):
		return nil, s.storageError(call.Name, err)
	}
	// Even the call alone could not be recorded: answer, unaudited, and
	// say why on stderr.
	s.logInternal(call.Name, err)
	_, reply = call.Encode(nil, ErrInternal)
	return reply, nil
}

// tokenRevoked reports whether call's token (with Options.LedgerTokens)
// is revoked, or unknown, as lt sees the ledger.
func (s *Service) tokenRevoked(lt *boltstore.Tx, call Call) (bool, error) {
	if !s.opts.LedgerTokens || call.Token == "" {
		return false, nil
	}
	var sum [32]byte
	if len(call.Token) != 2*len(sum) {
		return true, nil
	}
	if _, err := hex.Decode(sum[:], []byte(call.Token)); err != nil {
		return true, nil
	}
	t, ok, err := projections.LookupToken(lt, sum)
	return !ok || t.RevokedSeq != 0, err
}

// firstPending reports whether a call (first: as do's) still has the
// skills.loaded record to write.
func (s *Service) firstPending(first *bool) bool {
	if first != nil {
		return *first
	}
	return !s.first()
}

func (s *Service) first() bool {
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	return s.firstDone
}

// callArgs are a call's arguments as parsed once, what the domain's rules
// say of them (check), and what tool.called records of them: their
// canonical hash (tool.called v2) and the ids they name (the event's
// subjects).
type callArgs struct {
	parsed  *domain.Args
	invalid error
	sum     string
	ids     []string
}

// maxParsing bounds the argument trees of the calls in flight in one
// process, all transports and guests together. The transports bound the
// bytes of what is in flight, but a tree takes 100 to 160 bytes a value,
// for as few as 2 bytes of text: 64 calls of 100 KB took 420 MB on stdio,
// and HTTP bodies of such calls in batches many GB (attack review).
const maxParsing = 64 << 20

// smallTrees of maxParsing is kept for trees of at most smallTree (a call
// of up to 800 bytes or so: most calls), so that they never queue behind
// large ones: a caller's tiny call waited 45 s behind another token's
// batches of 8 MB trees, waiting their turn in order (attack review).
const smallTrees, smallTree = 8 << 20, 64 << 10

// trees is the process's bound on argument trees: two lanes, each serving
// its callers in order.
type trees struct{ large, small *semaphore.Weighted }

func newTrees() *trees {
	return &trees{large: semaphore.NewWeighted(maxParsing - smallTrees), small: semaphore.NewWeighted(smallTrees)}
}

// heldTree is a tree's room in its lane, given back once (release).
type heldTree struct {
	lane *semaphore.Weighted
	w    int64
}

// hold waits for room for a tree of weight w (the caller waits its turn,
// however long: a call that reached the service is recorded).
func (t *trees) hold(w int64) heldTree {
	h := heldTree{lane: t.large, w: min(w, maxParsing-smallTrees)}
	if w <= smallTree {
		h.lane = t.small
	}
	_ = h.lane.Acquire(context.Background(), h.w) // never fails: its context never ends
	return h
}

func (h *heldTree) release() {
	if h.lane != nil {
		h.lane.Release(h.w)
		h.lane = nil
	}
}

// treeWeight is the most memory the tree of arguments of n bytes holds
// (domain.ParseArgs): 160 bytes for each value n bytes can hold, up to
// domain.MaxValues, and the text of strings and keys decoded.
func treeWeight(n int) int64 {
	values := min(int64(n)/2+1, domain.MaxValues+1)
	return 160*values + int64(n)
}

func readArgs(call Call) callArgs {
	a := domain.ParseArgs(call.Args)
	return callArgs{parsed: a, invalid: check(call, a), sum: hexSHA256(canonicalJCS(call.Args)), ids: namedIDs(a)}
}

// record encodes the reply and appends the call's tool.called event.
func (s *Service) record(tx *Tx, call Call, args callArgs, start time.Time, result any, herr error, reply *[]byte) error {
	code, out := call.Encode(result, herr)
	*reply = out
	return s.appendCall(tx, call, args, start, code, sha256.Sum256(out))
}

// appendCall appends the call's tool.called event: its outcome code and
// the SHA-256 of the exact reply bytes.
func (s *Service) appendCall(tx *Tx, call Call, args callArgs, start time.Time, code string, replySum [sha256.Size]byte) error {
	p := projections.ToolCalled{
		// An unknown tool's name as its refusal quotes it: a 4 MB name
		// was a 4 MB event, and the file kept every one (attack review).
		Tool:         domain.Clip(call.Name),
		ArgsSHA256:   ledger.Digest(args.sum),
		Outcome:      code,
		ResultSHA256: ledger.DigestOf(replySum),
		DurationUS:   s.opts.Now().Sub(start).Microseconds(),
		Client:       call.Client,
	}
	if call.Actor != "" {
		p.Client, p.ClientClaim, p.Token = "", call.Client, ledger.Digest(call.Token)
	}
	_, err := tx.emit(projections.TypeToolCalled, args.ids, &p)
	return err
}

func (s *Service) actor(call Call) string {
	switch {
	case call.Actor != "":
		return call.Actor
	case s.opts.Agent != "":
		return s.opts.Agent
	case call.Client != "":
		return call.Client
	}
	return "unknown"
}

// isStorage tells a failed commit (lock timeout, I/O) from a failure of the
// call's own logic: the ledger reports the former as anything but the
// function's error.
func isStorage(err error) bool {
	var pe *boltstore.PanicError
	var rej *rejected
	if errors.As(err, &pe) || errors.As(err, &rej) {
		return false
	}
	var fe *funcError
	return !errors.As(err, &fe)
}

// funcError marks an error raised inside a call's own function (not by
// the commit), so Do can tell the two apart.
type funcError struct{ err error }

func (e *funcError) Error() string { return e.err.Error() }
func (e *funcError) Unwrap() error { return e.err }

// mayBeRecorded ends the reason of a call whose outcome is unknown: what
// the agent is to do before calling again.
const mayBeRecorded = ": the call may or may not be in the ledger; look for what it writes (or its tool.called event: logbook replay --type tool.called) before calling again"

func (s *Service) storageError(tool string, err error) error {
	reason, unknown := "the ledger could not commit", false
	var handed *outcomeUnknown
	var ie *ledger.IntegrityError
	switch {
	case errors.As(err, &handed):
		reason, unknown = "the logbook process holding the ledger, which this call was handed to, exited, was stopped (SIGSTOP, or ^Z in its terminal) or stopped answering before it answered"+mayBeRecorded, true
	case errors.Is(err, boltstore.ErrOutcomeUnknown):
		reason, unknown = "the disk failed while this call was made durable (see the server's log)"+mayBeRecorded, true
		if errors.Is(err, boltstore.ErrDiskFull) {
			reason = "the disk is full, and " + reason
		}
	case errors.Is(err, boltstore.ErrAppendUnknown):
		reason, unknown = "the replicated log (NATS JetStream) neither took nor refused this call's events in time (see the server's log)"+mayBeRecorded, true
	case errors.Is(err, boltstore.ErrLogDenied):
		reason = "the replicated log's (the NATS JetStream stream's) servers deny this node's NATS user a subject the ledger needs (its rights were changed: see the server's log for which): nothing of this call was recorded; calls succeed again once the user is allowed it"
	case errors.Is(err, boltstore.ErrLogUnreachable):
		reason = "the replicated log's (the NATS JetStream stream's) servers did not answer this node in time (down, unreachable from it, or electing a leader: see the server's log): nothing of this call was recorded; call again once they answer"
	case errors.Is(err, boltstore.ErrLogGone):
		reason = "the replicated log (the NATS JetStream stream) no longer exists: it was deleted while this server ran, and is never made again by logbook (see the server's log). Nothing of this call was recorded, and nothing more is until the stream is restored or this node's copy is migrated into a new one (logbook migrate)"
	case errors.Is(err, boltstore.ErrLogUnsafe):
		reason = "the replicated log's (the NATS JetStream stream's) settings were changed while this server ran to ones that can lose or rewrite events (see the server's log for which): nothing of this call was recorded, and nothing more is until they are restored"
	case errors.Is(err, boltstore.ErrHeadMoved):
		reason = "other logbook nodes kept appending to the replicated log (NATS JetStream) first, each time this call was run again: nothing of it was recorded; call again"
	case errors.As(err, &ie):
		reason = fmt.Sprintf("an event failed this node's integrity checks at seq %d (damaged, foreign or rewritten, as a replicated log's may be: see the server's log): nothing of this call was recorded, and nothing more is until it is resolved", ie.Seq)
	case errors.Is(err, boltstore.ErrSyncFailed):
		reason = "the disk failed a sync of the ledger file: this process commits no more; restart it (opening the ledger recovers it from its journal)"
	case errors.Is(err, boltstore.ErrDiskFull):
		reason = "the disk is full (no space left for the ledger file, or it may grow no more: a quota or a file size limit): nothing of this call was recorded; calls succeed again once there is room, without a restart"
	case errors.Is(err, projections.ErrNoProjections):
		reason = "the ledger file holds no projections (a rebuild that did not finish dropped them) and this server could not fold them again from the log (see its log); run logbook rebuild on the ledger file"
	case errors.Is(err, projections.ErrVersionChanged):
		reason = "another logbook version rebuilt the projections; restart this server (it rebuilds them), or run logbook rebuild on the ledger file"
	case errors.Is(err, boltstore.ErrLocked):
		reason = "the ledger file is locked by another process (timed out)"
		if s.opts.HeldBy != nil {
			if who := s.opts.HeldBy(); who != "" {
				reason = "the ledger file is locked, held by " + who + " (timed out)"
			}
		}
	case errors.Is(err, boltstore.ErrNodeCopy):
		reason = "the ledger file became a logbook server node's local copy of a replicated log (NATS JetStream; <file>.stream names the stream) after this process opened it: written alone it would fork from the stream, so nothing of this call was recorded, and nothing more is by this process; reach the ledger through a node (logbook serve --connect URL)"
	case errors.Is(err, boltstore.ErrClosed):
		reason = "the server is shutting down"
	case errors.Is(err, boltstore.ErrReplaced):
		reason = "the ledger file was deleted or replaced under this server; it writes nothing more to it (see its log)"
	case errors.Is(err, boltstore.ErrDamaged):
		reason = "the ledger file is damaged; run logbook verify on it"
	}
	if n, ok := s.failLog.allow(time.Now()); ok {
		s.log.Error("commit failed", "tool", tool, "err", err, "suppressed_since_last", n)
	}
	return &StorageError{Reason: reason, Err: err, Unknown: unknown}
}

// rateLimit lets one log line through per interval and counts the rest: a
// full disk fails every call, and its log must not fill the disk further.
type rateLimit struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const failLogInterval = time.Second

func (r *rateLimit) allow(now time.Time) (suppressed int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < failLogInterval {
		r.suppressed++
		return 0, false
	}
	suppressed, r.suppressed, r.last = r.suppressed, 0, now
	return suppressed, true
}

func (s *Service) logInternal(tool string, err error) {
	var pe *boltstore.PanicError
	if errors.As(err, &pe) {
		s.log.Error("panic in tool call", "tool", tool, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return
	}
	s.log.Error("tool call failed", "tool", tool, "err", err)
}

// isDomain reports whether err is one of the contract's answers (rather than
// an internal failure).
func isDomain(err error) bool {
	for _, e := range []error{ErrInvalidInput, ErrTaskNotFound, ErrProjectNotFound, ErrSessionNotFound,
		ErrInvalidTransition, ErrTaskClosed, ErrWritebackRequired, ErrCircularDependency, ErrAlreadyFinalized, ErrReadOnly, ErrDuplicate} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// namedIDs are the ids an argument object names (task_id, parent_id,
// source_task_id, session_id): the subjects of its tool.called event. Of a repeated key
// the last counts, as encoding/json decodes it. Arguments past the parse
// limits (refused) are decoded from their text.
func namedIDs(a *domain.Args) []string {
	if a.OverLimit() {
		texts := domain.TopStrings(a.Raw(), idKeys...)
		if texts == nil {
			return nil
		}
		return idsOf(func(k string) string { return texts[slices.Index(idKeys, k)] })
	}
	obj := a.Object()
	if obj == nil || obj.Kind() != domain.Object {
		return nil
	}
	return idsOf(func(k string) string {
		last := ""
		for _, m := range obj.Members() {
			if m.Key == k {
				last = ""
				if m.Value.Kind() == domain.String {
					last = m.Value.Text()
				}
			}
		}
		return last
	})
}

// idKeys are the arguments that name a call's subjects.
var idKeys = []string{"task_id", "parent_id", "source_task_id", "session_id"}

// idsOf are the ids among the string values get gives of the id keys ("" if none).
func idsOf(get func(key string) string) []string {
	var ids []string
	for _, k := range idKeys {
		id := get(k)
		_, task := domain.ParseID(domain.TaskPrefix, id)
		_, session := domain.ParseID(domain.SessionPrefix, id)
		if task || session {
			ids = append(ids, id)
		}
	}
	return ids
}
