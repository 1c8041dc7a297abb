//go:build linux

package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The agents: go-sdk clients over Streamable HTTP, each with its own bearer
// token, each call carrying a marker unique to the run that ends up in its
// events' payloads.

type bearer struct{ token string }

var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return transport.RoundTrip(r)
}

func connect(ctx context.Context, url, token, name string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}, Timeout: 120 * time.Second}, DisableStandaloneSSE: true, MaxRetries: -1}
	return c.Connect(ctx, tr, nil)
}

type envelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// outcome of one call
type outcome struct {
	marker, tool, kind, detail string // kind: ack, refused (ERR_STORAGE nothing recorded), unknown, transport, other
	node                       int
}

type recorder struct {
	mu  sync.Mutex
	out []outcome
}

func (r *recorder) add(o outcome) { r.mu.Lock(); r.out = append(r.out, o); r.mu.Unlock() }

func call(ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) (envelope, error) {
	cctx, cancel := context.WithTimeout(ctx, 100*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return envelope{}, err
	}
	var env envelope
	if len(res.Content) != 1 {
		return env, fmt.Errorf("%d content", len(res.Content))
	}
	t, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return env, fmt.Errorf("content %T", res.Content[0])
	}
	return env, json.Unmarshal([]byte(t.Text), &env)
}

func classify(env envelope, err error) (string, string) {
	switch {
	case err != nil:
		return "transport", err.Error()
	case env.OK:
		return "ack", ""
	case env.Error.Code == "ERR_STORAGE" && strings.Contains(env.Error.Message, "outcome is unknown"):
		return "unknown", string(env.Error.Details)
	case env.Error.Code == "ERR_STORAGE":
		return "refused", string(env.Error.Details)
	default:
		return "other:" + env.Error.Code, env.Error.Message
	}
}

// agent makes calls through node n until ctx ends, each with a new marker,
// recording each outcome; a transport error opens a new session.
func agent(ctx context.Context, rec *recorder, n *node, token, name string, k int) {
	rng := rand.New(rand.NewPCG(uint64(k), *seed))
	var cs *sdk.ClientSession
	taskID := ""
	seqn := 0
	for ctx.Err() == nil {
		if cs == nil {
			c, err := connect(ctx, n.url(), token, name)
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			cs = c
		}
		seqn++
		marker := fmt.Sprintf("soak-%s-%d-%d", runID, k, seqn)
		tool := "task_create"
		args := map[string]any{"title": "work " + marker, "project": "chaos"}
		if taskID != "" {
			switch rng.IntN(4) {
			case 1:
				tool, args = "thought_record", map[string]any{"task_id": taskID, "type": "analysis", "content": "thought " + marker}
			case 2:
				tool, args = "memory_write", map[string]any{"key": fmt.Sprintf("k%d", k), "scope": "agent", "content": "memory " + marker}
			case 3:
				tool, args = "finding_record", map[string]any{"task_id": taskID, "category": "bug", "summary": "finding " + marker}
			}
		}
		env, err := call(ctx, cs, tool, args)
		kind, detail := classify(env, err)
		rec.add(outcome{marker: marker, tool: tool, kind: kind, detail: detail, node: n.i})
		if kind == "ack" && tool == "task_create" {
			var d struct {
				TaskID string `json:"task_id"`
			}
			json.Unmarshal(env.Data, &d)
			taskID = d.TaskID
		}
		if kind == "transport" {
			cs.Close()
			cs = nil
			time.Sleep(100 * time.Millisecond)
		}
	}
	if cs != nil {
		cs.Close()
	}
}
