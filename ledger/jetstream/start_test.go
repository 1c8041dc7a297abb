package jetstream

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// logLines is a Logf that sends each line it is given to the returned
// channel (dropping what no one reads).
func logLines() (func(string, ...any), chan string) {
	lines := make(chan string, 64)
	return func(format string, args ...any) {
		select {
		case lines <- fmt.Sprintf(format, args...):
		default:
		}
	}, lines
}

// awaitLine waits for a line holding want, failing the test if done
// reports first.
func awaitLine(tb testing.TB, lines chan string, want string, done chan error, what string) {
	tb.Helper()
	for {
		select {
		case res := <-done:
			tb.Fatalf("%s returned (%v) before saying %q: it did not wait", what, res, want)
		case l := <-lines:
			tb.Log(l)
			if strings.Contains(l, want) {
				return
			}
		}
	}
}

// TestOpenWaitsForPlacement: a cluster still starting refuses to place a
// 3-replica stream while fewer than 3 of its servers have joined ("no
// suitable peers for placement", 10005; before its metadata leader is
// elected, "JetStream system temporarily unavailable", 10008). Open asks
// again, as it does when nothing answers, and opens the stream once the
// third server is up. (It returned the refusal: 2 of 20 cold starts of
// three nodes with a 3-server cluster, every node of those exiting 2.)
func TestOpenWaitsForPlacement(t *testing.T) {
	c := unstartedCluster(t, 3, "always")
	c.start(0)
	c.start(1)
	nc := c.connect(t, 0, "app")
	logf, lines := logLines()
	done := make(chan error, 1)
	go func() {
		r, err := open(context.Background(), nc, Options{Stream: "placed", Logf: logf}, hooks{})
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	awaitLine(t, lines, "err_code=10005", done, "open with 2 of 3 servers up")
	c.start(2)
	if err := <-done; err != nil {
		t.Fatalf("open once the third server is up: %v", err)
	}
}

// TestConnectWaitsForServers: a node started with its NATS servers, before
// any of them listens, connects once one does, within OpenWait. (Connect
// returned "no servers available for connection" at once: 29 of 60 node
// starts, starting three nodes with a 3-server cluster 20 times.)
func TestConnectWaitsForServers(t *testing.T) {
	c := unstartedCluster(t, 1, "always")
	logf, lines := logLines()
	done := make(chan error, 1)
	go func() {
		_, closeAll, err := Connect(context.Background(), Dial{URLs: c.url(0), User: "app", Password: "app"},
			Options{Stream: "s", Replicas: 1, AllowUnreplicated: true, Logf: logf})
		if err == nil {
			closeAll()
		}
		done <- err
	}()
	awaitLine(t, lines, "no servers available", done, "Connect with no server listening")
	c.start(0)
	if err := <-done; err != nil {
		t.Fatalf("Connect once the server listens: %v", err)
	}
}
