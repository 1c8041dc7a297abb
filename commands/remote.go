package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/domain"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/skills"
)

// Several processes serving agents over stdio on one ledger file can run
// their calls in one of them, the one holding the file, instead of taking
// turns at the file: the others hand it each whole call (server's relay).
// The holder runs such a call through a guest Service made with the
// sender's own options, so the ledger records it exactly as if the sender
// had run it: the same actor, client, tool.called and skills.loaded record.

// Remote runs a Service's calls in the process that holds the ledger.
type Remote interface {
	// Forward sends f and returns the holder's answer. ErrNotSent means f
	// never reached a holder (none, or it went away before f was whole):
	// the call runs here instead. Any other error means f was sent and its
	// outcome is unknown; it is answered as a *StorageError, never retried.
	Forward(ctx context.Context, f Forward) (Forwarded, error)
}

// ErrNotSent is Remote.Forward's error for a call no holder received.
var ErrNotSent = errors.New("not sent")

// Forward is one call as a Service hands it to a Remote.
type Forward struct {
	Name   string
	Args   json.RawMessage
	Client string
	// First: the sender's skills.loaded record is still to be written.
	First bool
}

// Forwarded is the holder's answer to a Forward.
type Forwarded struct {
	Reply []byte // the exact reply bytes, as the sender's edge would have made them
	First bool   // the skills.loaded record is still to be written
}

// GuestOptions are a sender's options as its holder needs them.
type GuestOptions struct {
	Agent    string
	Project  string
	ReadOnly bool
	Skills   []skills.Skill
	Skipped  []events.SkippedSkill
	Version  string
	Started  time.Time // when the sender started (server_health's uptime)
}

var slugRE = regexp.MustCompile(domain.SlugPattern)

// Unprintable reports whether r has no place in an identity: a control
// character, or a format character (Unicode Cf: zero-width spaces,
// bidirectional overrides, soft hyphens), which is invisible or reorders
// what a terminal or page shows, so that two names that look alike are
// not. The zero-width non-joiner and joiner (U+200C, U+200D) are kept:
// Persian and Indic names and emoji sequences are spelled with them.
func Unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d'
}

// Visible reports whether s has a character that shows: not a space, nor
// a joiner alone. A name without one is no name.
func Visible(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsGraphic(r) && !unicode.IsSpace(r) && !Unprintable(r) && r != '\u200c' && r != '\u200d'
	}) >= 0
}

// CheckAgent says what is wrong with agent as a process's agent identity
// (logbook serve --agent, or a guest's): nil if nothing ("" is none).
func CheckAgent(agent string) error {
	if utf8.RuneCountInString(agent) > 128 || !utf8.ValidString(agent) || strings.IndexFunc(agent, Unprintable) >= 0 ||
		agent != "" && !Visible(agent) {
		return errors.New("must be at most 128 characters of valid UTF-8, at least one of them visible, with no control or format characters (such as U+200B or U+202E)")
	}
	return nil
}

// CheckProject says what is wrong with project as a default project
// (--project, or a guest's): nil if nothing.
func CheckProject(project string) error {
	if project != "" && !slugRE.MatchString(project) {
		return fmt.Errorf("%q is not a slug like my-project", project)
	}
	return nil
}

// Check says what is wrong with g: a guest's options pass the checks its
// own process's flags would have had to pass.
func (g GuestOptions) Check() error {
	if err := CheckAgent(g.Agent); err != nil {
		return fmt.Errorf("agent %w", err)
	}
	if err := CheckProject(g.Project); err != nil {
		return fmt.Errorf("project %w", err)
	}
	return nil
}

// Guest returns what a Remote sends: s's options as a holder needs them.
func (s *Service) Guest() GuestOptions {
	return GuestOptions{Agent: s.opts.Agent, Project: s.opts.Project, ReadOnly: s.opts.ReadOnly,
		Skills: s.opts.Skills.All(), Skipped: s.opts.Skipped, Version: s.opts.Version, Started: s.started}
}

// NewGuest returns a Service that runs another process's calls on s's
// ledger with that process's options g: its own actor, read-only switch,
// default project, skills and version, s's logger and clock. Its read
// transactions take turns with s's, and it waits for s's refold of missing
// projections rather than run one of its own.
func (s *Service) NewGuest(g GuestOptions) *Service {
	opts := s.opts
	opts.Agent, opts.Project, opts.ReadOnly = g.Agent, g.Project, g.ReadOnly
	opts.Skills, opts.Skipped, opts.Version = skills.NewSet(g.Skills), g.Skipped, g.Version
	return &Service{l: s.l, opts: opts, started: g.Started, log: s.log, failLog: s.failLog, readMu: s.readMu, refolding: s.refolding}
}

// DoGuest runs a call a guest forwarded with f.First: Do's reply and error,
// and whether the guest's skills.loaded record is still to be written.
func (s *Service) DoGuest(ctx context.Context, call Call, first bool) (reply []byte, stillFirst bool, err error) {
	reply, err = s.do(ctx, call, &first)
	return reply, first, err
}

// SetRemote makes s run its calls through r whenever r has a holder to
// send them to (nil: always here). Calls with a proved Actor (server mode)
// always run here.
func (s *Service) SetRemote(r Remote) {
	if r == nil {
		s.remote.Store(nil)
		return
	}
	s.remote.Store(&r)
}

// forward runs call through r. sent is false when r had no holder for it:
// the caller runs it here. While this process's skills.loaded record is
// unwritten its calls go one at a time, as in do.
func (s *Service) forward(ctx context.Context, r Remote, call Call) (reply []byte, sent bool, err error) {
	if s.first() {
		return s.forwardOnce(ctx, r, call, nil)
	}
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	pending := !s.firstDone
	reply, sent, err = s.forwardOnce(ctx, r, call, &pending)
	if !sent {
		// Here, still holding firstMu: do leaves it alone given pending.
		reply, err = s.do(ctx, call, &pending)
	}
	if !pending {
		s.firstDone = true
	}
	return reply, true, err
}

// forwardOnce sends call to r; with first non-nil, as do's first.
func (s *Service) forwardOnce(ctx context.Context, r Remote, call Call, first *bool) ([]byte, bool, error) {
	f := Forward{Name: call.Name, Args: call.Args, Client: call.Client, First: first != nil && *first}
	res, err := r.Forward(ctx, f)
	switch {
	case errors.Is(err, ErrNotSent):
		return nil, false, nil
	case err != nil:
		return nil, true, s.storageError(call.Name, &outcomeUnknown{err})
	}
	if first != nil {
		*first = res.First
	}
	return res.Reply, true, nil
}

// outcomeUnknown: a call was sent to the holder, which went away before
// answering.
type outcomeUnknown struct{ err error }

func (e *outcomeUnknown) Error() string { return "outcome unknown: " + e.err.Error() }
func (e *outcomeUnknown) Unwrap() error { return e.err }
