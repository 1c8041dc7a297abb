//go:build linux

package jetstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// cold starts a new cluster and its three nodes -runs times over, then makes
// one call through each node with a token issued on the first: every node
// must start and answer its first call. It returns the number of failures.

func cold(base string) int {
	type res struct {
		nodeFail, firstRefused, firstUnknown, firstOK int
		reasons                                       []string
	}
	var total res
	for r := range *runs {
		dir := filepath.Join(base, fmt.Sprintf("cold%02d", r))
		os.MkdirAll(dir, 0o700)
		c, nodes := startCluster(dir, *waitNats)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := n.start()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					total.nodeFail++
					b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.log", n.i)))
					lines := strings.Split(strings.TrimSpace(string(b)), "\n")
					reason := lines[len(lines)-1] // the log's last line
					total.reasons = append(total.reasons, fmt.Sprintf("run %d node%d: %v: %s", r, n.i, err, reason))
					logf("run %d node%d failed: %v: %s", r, n.i, err, reason)
				} else {
					logf("run %d node%d listening after %v", r, n.i, d.Round(time.Millisecond))
				}
			}()
		}
		wg.Wait()
		// first calls: a token through the first live node, then one call per node
		var live *node
		for _, n := range nodes {
			if n.alive.Load() {
				live = n
				break
			}
		}
		if live != nil {
			out, errs, code := runCmd("token", "add", "--db", live.db, "--issuer", "op", "--agent", "a")
			if code != 0 {
				total.firstRefused++
				total.reasons = append(total.reasons, fmt.Sprintf("run %d token add: %s", r, strings.TrimSpace(errs)))
				logf("run %d token add refused: %s", r, errs)
			} else {
				ls := strings.Split(strings.TrimSpace(out), "\n")
				tok := ls[len(ls)-1]
				var cwg sync.WaitGroup
				for _, n := range nodes {
					if !n.alive.Load() {
						continue
					}
					cwg.Add(1)
					go func() {
						defer cwg.Done()
						var cs *sdk.ClientSession
						var err error
						for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
							if cs, err = connect(context.Background(), n.url(), tok, "a"); err == nil {
								break
							}
						}
						if cs == nil {
							mu.Lock()
							total.reasons = append(total.reasons, fmt.Sprintf("run %d node%d connect: %v", r, n.i, err))
							mu.Unlock()
							return
						}
						defer cs.Close()
						env, err := call(context.Background(), cs, "task_create", map[string]any{"title": "first", "project": "cold"})
						kind, detail := classify(env, err)
						mu.Lock()
						defer mu.Unlock()
						switch kind {
						case "ack":
							total.firstOK++
						case "refused":
							total.firstRefused++
							total.reasons = append(total.reasons, fmt.Sprintf("run %d node%d first call refused: %s", r, n.i, detail))
						default:
							total.firstUnknown++
							total.reasons = append(total.reasons, fmt.Sprintf("run %d node%d first call %s: %s", r, n.i, kind, detail))
						}
					}()
				}
				cwg.Wait()
			}
		}
		for _, n := range nodes {
			n.stop()
		}
		for i := range 3 {
			c.kill(i)
		}
	}
	logf("COLD SUMMARY runs=%d nodeStartFailures=%d firstOK=%d firstRefused=%d firstOther=%d", *runs, total.nodeFail, total.firstOK, total.firstRefused, total.firstUnknown)
	for _, r := range total.reasons {
		logf("  %s", r)
	}
	return total.nodeFail + total.firstRefused + total.firstUnknown
}
