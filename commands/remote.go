package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

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
	// LockTimeout is how long the sender's calls wait for the file lock
	// (its --lock-timeout; 0: the hub's).
	LockTimeout time.Duration
}

var slugRE = regexp.MustCompile(domain.SlugPattern)

// Unprintable reports whether r has no place in an identity wherever it
// stands: a control character, or a format character (Unicode Cf:
// zero-width spaces, bidirectional overrides, soft hyphens) or another
// default-ignorable one (the combining grapheme joiner U+034F, the Hangul
// fillers U+3164 and U+FFA0), which is invisible or reorders what a
// terminal or page shows, so that two names that look alike are not. The
// zero-width non-joiner and joiner (U+200C, U+200D), the variation
// selectors and the tag characters are not: they have a place where they
// join or select something (Stray says where).
func Unprintable(r rune) bool {
	switch {
	case r == zwnj, r == zwj, unicode.Is(unicode.Variation_Selector, r), isTag(r):
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

const (
	zwnj      = '\u200c'
	zwj       = '\u200d'
	cancelTag = '\U000E007F'
)

// isTag reports whether r is a tag character (U+E0020–U+E007F): spelled
// after U+1F3F4, they make a subdivision's flag (England, Scotland, Wales).
func isTag(r rune) bool { return r >= 0xE0020 && r <= cancelTag }

// Stray returns the index in s of the first character that has no place
// in an identity, and its size in bytes; -1 and 0 if none has. Such a
// character shows nothing there: a name with it looks like the name
// without it, another identity ("ali\u200dce" like "alice"). A zero-width
// joiner or non-joiner has a place only where it joins (or keeps apart)
// what is on both sides of it: after or before a virama (Indic scripts),
// between letters of a script whose letters join (Arabic, Syriac, N'Ko,
// Mongolian, …: Persian writes with the non-joiner), and the joiner
// between the pictographs of an emoji sequence. A variation selector has
// one right after a symbol (an emoji's presentation), a Han ideograph
// (ideographic variation sequences), a Mongolian letter, or a keycap's
// digit; tag characters only as a flag's tag sequence: U+1F3F4, tags,
// U+E007F. Everything else Unprintable refuses is stray wherever it is.
func Stray(s string) (int, int) {
	var prev rune = -1
	for i, r := range s {
		_, size := utf8.DecodeRuneInString(s[i:])
		next, _ := utf8.DecodeRuneInString(s[i+size:])
		if i+size == len(s) {
			next = -1
		}
		var ok bool
		switch {
		case r == zwnj || r == zwj:
			ok = joins(prev, r, next)
		case unicode.Is(unicode.Variation_Selector, r):
			ok = selects(prev, r, next)
		case isTag(r):
			ok = inTagSequence(s, i)
		default:
			ok = !Unprintable(r)
		}
		if !ok {
			return i, size
		}
		prev = r
	}
	return -1, 0
}

// joiningScripts are the scripts whose letters join one another: a
// joiner or non-joiner between two of their letters changes their shapes.
var joiningScripts = []*unicode.RangeTable{unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian,
	unicode.Mandaic, unicode.Manichaean, unicode.Psalter_Pahlavi, unicode.Adlam, unicode.Hanifi_Rohingya,
	unicode.Sogdian, unicode.Old_Uyghur, unicode.Chorasmian, unicode.Phags_Pa}

// joins reports whether the joiner or non-joiner r, between prev and next
// (-1: none), joins or keeps apart what is on both sides of it.
func joins(prev, r, next rune) bool {
	if prev < 0 || next < 0 {
		return false
	}
	letter := func(c rune) bool { return unicode.IsLetter(c) || unicode.IsMark(c) }
	switch {
	case virama(prev) && letter(next), letter(prev) && virama(next):
		return true
	case letter(prev) && letter(next) && unicode.In(prev, joiningScripts...) && unicode.In(next, joiningScripts...):
		return true
	}
	// An emoji ZWJ sequence: a pictograph (with its skin tone modifier or
	// presentation selector), the joiner, the next pictograph.
	return r == zwj && (unicode.Is(unicode.So, prev) || prev == '\ufe0f' || prev >= 0x1F3FB && prev <= 0x1F3FF) &&
		unicode.Is(unicode.So, next)
}

// virama reports whether r is a virama (canonical combining class 9).
func virama(r rune) bool {
	var b [utf8.UTFMax]byte
	return unicode.IsMark(r) && norm.NFD.Properties(b[:utf8.EncodeRune(b[:], r)]).CCC() == 9
}

// selects reports whether the variation selector r, after prev and before
// next (-1: none), selects a form of prev.
func selects(prev, r, next rune) bool {
	switch {
	case prev < 0:
		return false
	case unicode.Is(unicode.So, prev), unicode.Is(unicode.Han, prev):
		return true
	case r >= 0x180B && r <= 0x180F:
		return unicode.Is(unicode.Mongolian, prev) && unicode.IsLetter(prev)
	}
	// A keycap: a digit, # or *, U+FE0F, U+20E3.
	return r == '\ufe0f' && next == '\u20e3' && (prev >= '0' && prev <= '9' || prev == '#' || prev == '*')
}

// inTagSequence reports whether the tag character at s[i:] is part of a
// flag's tag sequence: U+1F3F4, tags U+E0020–U+E007E, U+E007F.
func inTagSequence(s string, i int) bool {
	start := i
	for start > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:start])
		if !isTag(r) || r == cancelTag {
			break
		}
		start -= n
	}
	if base, _ := utf8.DecodeLastRuneInString(s[:start]); base != 0x1F3F4 {
		return false
	}
	for j, r := range s[start:] {
		switch {
		case r == cancelTag:
			return j > 0 && start+j >= i // tags, then the end of the sequence
		case !isTag(r):
			return false
		}
	}
	return false
}

// Visible reports whether s has a character that shows: a letter, digit,
// punctuation or symbol, not a space, a mark alone, a joiner or a
// selector, nor one of the blanks fonts draw as nothing (Unprintable's,
// U+2800). A name without one is no name.
func Visible(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) && !Unprintable(r) && r != '\u2800'
	}) >= 0
}

// CheckAgent says what is wrong with agent as a process's agent identity
// (logbook serve --agent, or a guest's): nil if nothing ("" is none).
func CheckAgent(agent string) error {
	if agent == "" {
		return nil
	}
	if utf8.RuneCountInString(agent) > 128 || !utf8.ValidString(agent) || !Visible(agent) {
		return errors.New("must be at most 128 characters of valid UTF-8, at least one of them visible, with no control or format characters (such as U+200B or U+202E)")
	}
	if i, _ := Stray(agent); i >= 0 {
		r, _ := utf8.DecodeRuneInString(agent[i:])
		return fmt.Errorf("must not have U+%04X at byte %d: a control, format or invisible character (such as U+200B or U+202E) makes the name look like another (a joiner or variation selector is kept only where it joins or selects something)", r, i)
	}
	if strings.TrimSpace(agent) != agent {
		return errors.New("must not begin or end with a space: the name would look like another")
	}
	return nil
}

// CheckProject says what is wrong with project as a default project
// (--project, or a guest's): nil if nothing.
func CheckProject(project string) error {
	if project != "" && !slugRE.MatchString(project) {
		return fmt.Errorf("%q is not a slug like my-project", domain.Clip(project))
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
		Skills: s.opts.Skills.All(), Skipped: s.opts.Skipped, Version: s.opts.Version, Started: s.started,
		LockTimeout: cmp.Or(s.lockWait, s.l.LockTimeout())}
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
	return &Service{l: s.l, opts: opts, started: g.Started, log: s.log, failLog: s.failLog, readMu: s.readMu, refolding: s.refolding, trees: s.trees,
		lockWait: g.LockTimeout}
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
