package console

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
)

// maxSessions bounds the logins the console keeps: one more forgets the
// oldest (its browser logs in again).
const maxSessions = 4096

// sessions are the console's logins, in this process's memory only: the
// cookie holds a random id, never the token, which is a bearer credential
// for /mcp too. Browsers send a cookie to every port of its host, so a
// cookie holding the token handed it to any other web server on that host
// a logged-in browser visited (another local service, or one an agent
// started to lure its auditor): that server could then call every tool as
// the token's agent. An id reads the console of this server, while it
// runs, and nothing else. A restart logs every browser out.
type sessions struct {
	mu   sync.Mutex
	byID map[string]session
	n    uint64 // logins so far
}

type session struct {
	token string
	n     uint64 // when it logged in, for the cap
}

// add records a login with token and returns its id.
func (s *sessions) add(token string) string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = make(map[string]session)
	}
	if len(s.byID) >= maxSessions {
		oldest, min := "", ^uint64(0)
		for id, ses := range s.byID {
			if ses.n < min {
				oldest, min = id, ses.n
			}
		}
		delete(s.byID, oldest)
	}
	s.n++
	s.byID[id] = session{token: token, n: s.n}
	return id
}

// token is the token session id logged in with; false if there is no such
// session (never one, logged out, forgotten, or from before a restart).
func (s *sessions) token(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.byID[id]
	return ses.token, ok
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}
