//go:build linux

package jetstream

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The monitor: each node's head against the stream's last seq, polled
// through the console's ledger page, to see how far behind a node falls.

var sizeRE = regexp.MustCompile(`<dd id="size">(\d+)</dd>`)

func nodeSize(n *node, token string) (uint64, error) {
	req, _ := http.NewRequest("GET", strings.TrimSuffix(n.url(), "/mcp")+"/ledger", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b := make([]byte, 0, 1<<16)
	buf := make([]byte, 8192)
	for {
		k, err := resp.Body.Read(buf)
		b = append(b, buf[:k]...)
		if err != nil {
			break
		}
	}
	m := sizeRE.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("status %d, no size", resp.StatusCode)
	}
	var v uint64
	fmt.Sscan(string(m[1]), &v)
	return v, nil
}

type seen struct {
	seq uint64
	at  time.Time
}

type monitor struct {
	mu       sync.Mutex
	stop     chan struct{}
	done     chan struct{}
	last     uint64
	lastAt   time.Time // when last was first seen
	size     []uint64
	pending  [][]seen // per node: stream seqs seen, not yet held by the node
	maxDelay []time.Duration
	maxSeq   []uint64
	caught   []time.Time // when the node first held the stream's last (reset when behind)
	lagging  []bool      // a LAG line was printed and the node has not caught up since
}

func startMonitor(c *cluster, nodes []*node, tokens []string, agentNode []int) *monitor {
	m := &monitor{stop: make(chan struct{}), done: make(chan struct{}), size: make([]uint64, 3),
		pending: make([][]seen, 3), maxDelay: make([]time.Duration, 3), maxSeq: make([]uint64, 3), caught: make([]time.Time, 3), lagging: make([]bool, 3)}
	tok := tokens[0]
	go func() {
		defer close(m.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			last, err := streamLast(c.urls())
			now := time.Now()
			m.mu.Lock()
			if err == nil && last > m.last {
				m.last, m.lastAt = last, now
				for i := range 3 {
					m.pending[i] = append(m.pending[i], seen{last, now})
				}
			}
			m.mu.Unlock()
			for i, n := range nodes {
				sz, err := nodeSize(n, tok)
				now := time.Now()
				if err != nil {
					continue
				}
				m.mu.Lock()
				m.size[i] = sz
				p := m.pending[i]
				for len(p) > 0 && p[0].seq <= sz {
					if d := now.Sub(p[0].at); d > 2*time.Second && !m.lagging[i] {
						logf("LAG node%d held seq %d %v after the stream showed it (once until it catches up)", i, p[0].seq, d.Round(time.Millisecond))
						m.lagging[i] = true
					}
					if d := now.Sub(p[0].at); d > m.maxDelay[i] {
						m.maxDelay[i], m.maxSeq[i] = d, p[0].seq
					}
					p = p[1:]
				}
				m.pending[i] = p
				if sz >= m.last && m.last > 0 {
					if m.caught[i].IsZero() {
						m.caught[i] = now
					}
					m.lagging[i] = false
				} else {
					m.caught[i] = time.Time{}
				}
				m.mu.Unlock()
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// report waits (up to max after stopped) for every node to hold the
// stream's last seq, then prints how long each took.
func (m *monitor) report(calm, stopped time.Time, max time.Duration) {
	deadline := stopped.Add(max)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		m.mu.Lock()
		all := time.Since(m.lastAt) > 2*time.Second
		for i := range 3 {
			if m.caught[i].IsZero() {
				all = false
			}
		}
		m.mu.Unlock()
		if all {
			break
		}
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	logf("MONITOR stream last %d (first seen %v after agents stopped)", m.last, m.lastAt.Sub(stopped).Round(time.Millisecond))
	for i := range 3 {
		behind := m.last - min(m.last, m.size[i])
		ca := "NEVER (within 40s)"
		if !m.caught[i].IsZero() {
			ca = fmt.Sprintf("%v after agents stopped, %v after the stream's last seq appeared", m.caught[i].Sub(stopped).Round(time.Millisecond), m.caught[i].Sub(m.lastAt).Round(time.Millisecond))
		}
		logf("MONITOR node%d head %d (behind %d): caught up %s; max delay over the run (calm began %v before agents stopped) %v (seq %d); pending %d",
			i, m.size[i], behind, ca, stopped.Sub(calm).Round(time.Millisecond), m.maxDelay[i].Round(time.Millisecond), m.maxSeq[i], len(m.pending[i]))
		for _, p := range m.pending[i] {
			logf("MONITOR   node%d never held seq %d first seen %v after agents stopped", i, p.seq, p.at.Sub(stopped).Round(time.Millisecond))
			break
		}
	}
}
