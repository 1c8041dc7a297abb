package jetstream

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSyncCheckedWithAServerDown: with one server of three down the stream
// works on, and so does a node (re)started meanwhile: the servers that
// answer are checked, the one that does not is warned of, not refused
// ("server n2 holding stream s did not say how it syncs": with
// --nats-sys-user no node could start until it was back). While fewer than
// a majority answer (a cluster still starting), they are asked again.
func TestSyncCheckedWithAServerDown(t *testing.T) {
	c := startCluster(t, 3, "always")
	first := openReplica(t, c.connect(t, 0, "app"), Options{Stream: "s", SystemConn: c.connect(t, 0, "sys")}, hooks{})
	info, err := first.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.stop(2)
	var warned []string
	// (Timeout: how long the servers are waited for, each time.)
	opts := Options{Stream: "s", SystemConn: c.connect(t, 0, "sys"), Timeout: 2 * time.Second, Logf: func(f string, a ...any) {
		warned = append(warned, fmt.Sprintf(f, a...))
	}}
	r, err := open(context.Background(), c.connect(t, 0, "app"), opts, hooks{})
	if err != nil {
		t.Fatalf("open with n2 of 3 down: %v", err)
	}
	r.Close()
	if len(warned) == 0 || !strings.Contains(strings.Join(warned, "\n"), "WARNING: NATS servers [n2]") {
		t.Errorf("open with n2 down warned %q, want n2 named as not checked", warned)
	}
	// Only n0 answers: asked again until n1 is back too.
	c.stop(1)
	logf, lines := logLines()
	first.opts.Logf, first.opts.Timeout = logf, 2*time.Second
	done := make(chan error, 1)
	go func() { done <- first.checkSync(context.Background(), info) }()
	awaitLine(t, lines, "asking again", done, "the sync check with 1 of 3 servers up")
	c.start(1)
	if err := <-done; err != nil {
		t.Fatalf("the sync check once 2 of 3 servers answer: %v", err)
	}
}

// TestHolders: the sync warning names the servers holding a clustered
// stream, and for a stream on one server (no cluster: no peers known) says
// so rather than printing an empty list.
func TestHolders(t *testing.T) {
	for _, c := range []struct {
		peers []string
		want  string
	}{
		{nil, "the NATS server holding stream t"},
		{[]string{"n0", "n1", "n2"}, "the NATS servers holding stream t (n0, n1, n2)"},
	} {
		if got := holders("t", c.peers); got != c.want {
			t.Errorf("holders(%v) = %q, want %q", c.peers, got, c.want)
		}
	}
}
