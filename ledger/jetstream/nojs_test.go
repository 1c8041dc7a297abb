package jetstream

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestOpenWithoutJetStream: servers that run no JetStream answer every
// request "no responders" at once. Open asks again until OpenWait, pausing
// between tries as for a cluster still starting, and then says to enable
// JetStream. (It asked again at once: some 200,000 tries a second, each
// logged, the process at full CPU for OpenWait; its doubling wait
// overflowed to a negative one, and it ended "context deadline exceeded".)
func TestOpenWithoutJetStream(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(time.Minute) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var tries atomic.Int64
	opts := Options{Stream: "nojs", Replicas: 1, AllowUnreplicated: true, OpenWait: 3 * time.Second,
		Logf: func(string, ...any) { tries.Add(1) }}
	_, err = Open(context.Background(), nc, opts)
	if !errors.Is(err, nats.ErrNoResponders) || !strings.Contains(err.Error(), "enable it on the NATS servers") {
		t.Errorf("open on a server without JetStream: %v; want no responders, saying to enable JetStream", err)
	}
	// A pause of a quarter of each try's wait (from 1s): a handful in
	// 3s, not hundreds of thousands.
	if n := tries.Load(); n > 50 {
		t.Errorf("asked again %d times in %v: it does not pause between tries", n, opts.OpenWait)
	}
}
