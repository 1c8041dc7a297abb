package console

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

const (
	// maxSessions bounds the logins the console keeps: one more forgets
	// the login used longest ago (its browser logs in again).
	maxSessions = 4096
	// maxPerToken bounds the logins of one token: one more forgets that
	// token's login used longest ago, so that a token's holder logging in
	// again and again cannot push every other token's logins out.
	maxPerToken = 64
	// idleTimeout ends a login no request has used for this long: a
	// browser left logged in on a shared machine does not read the ledger
	// for as long as the server runs.
	idleTimeout = 12 * time.Hour
)

// sessions are the console's logins, in this process's memory only: the
// cookie holds a random id, never the token, which is a bearer credential
// for /mcp too. Browsers send a cookie to every port of its host, so a
// cookie holding the token handed it to any other web server on that host
// a logged-in browser visited (another local service, or one an agent
// started to lure its auditor): that server could then call every tool as
// the token's agent. An id reads the console of this server, while it
// runs and the login is used, and nothing else. A restart logs every
// browser out.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	n    uint64           // uses so far (logins and requests): the recency order
	now  func() time.Time // the clock; nil is time.Now
}

type session struct {
	token string
	used  uint64    // when it was last used, in uses: for the caps
	last  time.Time // when it was last used: for idleTimeout
}

func (s *sessions) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// add records a login with token and returns its id.
func (s *sessions) add(token string) string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = make(map[string]*session)
	}
	now := s.clock()
	mine := 0
	for id, ses := range s.byID {
		switch {
		case now.Sub(ses.last) >= idleTimeout:
			delete(s.byID, id)
		case ses.token == token:
			mine++
		}
	}
	if mine >= maxPerToken {
		s.forgetLeastRecent(token)
	}
	if len(s.byID) >= maxSessions {
		s.forgetLeastRecent("")
	}
	s.n++
	s.byID[id] = &session{token: token, used: s.n, last: now}
	return id
}

// forgetLeastRecent forgets the login used longest ago: of token, or of
// any token if token is "".
func (s *sessions) forgetLeastRecent(token string) {
	oldest, min := "", ^uint64(0)
	for id, ses := range s.byID {
		if (token == "" || ses.token == token) && ses.used < min {
			oldest, min = id, ses.used
		}
	}
	delete(s.byID, oldest)
}

// token is the token session id logged in with, and marks the session
// used; false if there is no such session (never one, logged out,
// forgotten, idle for idleTimeout, or from before a restart).
func (s *sessions) token(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.byID[id]
	if !ok {
		return "", false
	}
	now := s.clock()
	if now.Sub(ses.last) >= idleTimeout {
		delete(s.byID, id)
		return "", false
	}
	s.n++
	ses.used, ses.last = s.n, now
	return ses.token, true
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}
