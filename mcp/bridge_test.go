package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A forwarded call whose server never answers (stopped, not dead) is
// answered with a JSON-RPC error once CallTimeout has passed, saying its
// outcome is unknown: the bridge waited for ever, and so did its client.
func TestBridgeCallTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := sdk.NewServer(&sdk.Implementation{Name: "stalled", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-release // the test's end, not the request's: a stopped server
			return &sdk.CallToolResult{}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Bridge(ctx, BridgeOptions{URL: ts.URL, Token: "t", CallTimeout: 200 * time.Millisecond}, inR, outW)
		outW.Close()
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(id string) string {
		t.Helper()
		for deadline := time.After(30 * time.Second); ; { // a hang guard, not a timing check
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the bridge ended: %v", <-done)
				}
				if strings.Contains(l, `"id":`+id+`,`) {
					return l
				}
			case <-deadline:
				t.Fatalf("no answer to call %s", id)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	answer("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	if l := answer("2"); !strings.Contains(l, `"error"`) || !strings.Contains(l, "may or may not have been recorded") {
		t.Errorf("a call the server never answers: %s", l)
	}
	inW.Close()
	cancel()
}
