package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestE2EMemoryBoundedUnderLargeRequests pipelines 64 requests of nearly the
// 4 MiB limit through the real binary (tools/calls with a huge description,
// refused but validated, hashed and audited; and a huge argument object):
// every one is answered, and the server's peak RSS stays far below what 64
// such requests held at once (over 2 GB before the byte budget).
func TestE2EMemoryBoundedUnderLargeRequests(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the server's RSS")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "mem.db")
	a := startAgent(t, "mem", "--db", db, "--skills", "../../fixtures/skills")
	const n, size = 64, 4<<20 - 4096
	base := peakRSS(t, a.cmd.Process.Pid)
	errs := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(a.in, 1<<20)
		for i := range n {
			var arg string
			if i%2 == 0 {
				arg = `{"title":"big","project":"mem","description":"` + strings.Repeat("d", size) + `"}`
			} else {
				arg = `{"title":"big","project":"mem","labels":[` + strings.Repeat(`"l",`, size/4-1) + `"l"]}`
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"task_create","arguments":%s}}`+"\n", 1000+i, arg)
		}
		errs <- w.Flush()
	}()
	seen := map[string]bool{}
	for len(seen) < n {
		line, err := a.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read after %d replies: %v\nstderr:\n%s", len(seen), err, a.stderr)
		}
		if len(line) > 1<<20 {
			t.Fatalf("a %d-byte reply", len(line))
		}
		i := bytes.Index(line, []byte(`"id":`))
		j := bytes.IndexByte(line[i:], ',')
		seen[string(line[i+5:i+j])] = true
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	peak := peakRSS(t, a.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB (at start %d MiB) for %d requests of %d MiB", peak>>20, base>>20, n, size>>20)
	// 64 requests held at once needed over 2 GB; the budget holds 4.
	if peak-base > 512<<20 {
		t.Errorf("peak RSS grew by %d MiB: memory held per connection is not bounded", (peak-base)>>20)
	}
	a.close()
}

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestE2EHTTPMemoryBoundedUnderLargeBatches posts, from 8 sessions at
// once, JSON-RPC batches of 40 tools/calls each holding 50,000 values in
// 100 KB (refused: labels hold 20): every call is answered, and logbook
// server's peak RSS stays far below what their argument trees took at
// once (5.2 GB before the process bound on trees and the server's soft
// heap limit; attack review).
func TestE2EHTTPMemoryBoundedUnderLargeBatches(t *testing.T) {
	if e2eRace {
		t.Skip("the race detector's shadow memory is no measure of the server's")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "mem.db")
	s := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "mem")
	const sessions, batch = 8, 40
	args := `{"title":"big","project":"mem","labels":[` + strings.Repeat(`0,`, 49990) + `0]}`
	var body bytes.Buffer
	body.WriteString("[")
	for i := range batch {
		if i > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"task_create","arguments":%s}}`, i, args)
	}
	body.WriteString("]")
	post := func(msg []byte, header http.Header) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(msg))
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		req.Header = header.Clone()
		res, err := (&http.Client{Transport: bearerTransport{token}}).Do(req)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	base := peakRSS(t, s.cmd.Process.Pid)
	var wg sync.WaitGroup
	for range sessions {
		wg.Go(func() {
			h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
			res, b := post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"mem","version":"1"}}}`), h)
			if res == nil || res.StatusCode != http.StatusOK {
				t.Errorf("initialize: %v %s", res, b)
				return
			}
			h.Set("Mcp-Session-Id", res.Header.Get("Mcp-Session-Id"))
			h.Set("MCP-Protocol-Version", "2025-03-26")
			post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), h)
			res, b = post(body.Bytes(), h)
			var answers []struct {
				Result struct {
					StructuredContent struct {
						Error struct{ Code string }
					}
				}
			}
			if res == nil || res.StatusCode != http.StatusOK || json.Unmarshal(b, &answers) != nil || len(answers) != batch {
				t.Errorf("the batch: %v, %d answers: %.200s", res, len(answers), b)
				return
			}
			for _, a := range answers {
				if a.Result.StructuredContent.Error.Code != "ERR_INVALID_INPUT" {
					t.Errorf("an answer: %+v", a)
				}
			}
		})
	}
	wg.Wait()
	peak := peakRSS(t, s.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB (at start %d MiB) for %d batches of %d calls of %d KB at once", peak>>20, base>>20, sessions, batch, len(args)>>10)
	if peak-base > 1<<30 {
		t.Errorf("peak RSS grew by %d MiB: the argument trees in flight are not bounded", (peak-base)>>20)
	}
}
