package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotSystemUser: the connection given to check how the servers sync is
// not a user of their system account, which alone may ask them.
var ErrNotSystemUser = errors.New("the NATS system user (--nats-sys-user, --nats-sys-creds) is not a user of the servers' system account: no server answers its requests")

// varz is the part of a server's VARZ answer the sync check reads.
type varz struct {
	Server struct {
		Name string `json:"name"`
	} `json:"server"`
	Data struct {
		JetStream struct {
			Config *struct {
				SyncAlways bool `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	} `json:"data"`
}

// checkSync checks that every server holding the stream fsyncs every write
// (`sync_interval: always`). Only a system-account user can ask servers for
// their settings: without Options.SystemConn it warns, loudly.
func (r *Replica) checkSync(ctx context.Context, info *jetstream.StreamInfo) error {
	peers := streamPeers(info)
	if r.opts.SystemConn == nil {
		r.opts.Logf("WARNING: logbook cannot check that the NATS servers holding stream %s (%v) run with `jetstream { sync_interval: always }`: "+
			"give a system-account connection to check it. Without it, NATS acknowledges writes before they are on disk and a power loss on a "+
			"quorum loses acknowledged ledger events.", r.opts.Stream, peers)
		return nil
	}
	sync, err := serverSync(ctx, r.opts.SystemConn, peers, r.opts.Timeout)
	if err != nil {
		return err
	}
	if len(peers) == 0 { // not clustered: every server that answered
		for name := range sync {
			peers = append(peers, name)
		}
	}
	for _, p := range peers {
		switch always, ok := sync[p]; {
		case !ok:
			return fmt.Errorf("%w: server %s holding stream %s did not say how it syncs", ErrServerSync, p, r.opts.Stream)
		case !always:
			return fmt.Errorf("%w: server %s holding stream %s does not run with `jetstream { sync_interval: always }`", ErrServerSync, p, r.opts.Stream)
		}
	}
	return nil
}

// streamPeers are the names of the servers holding the stream.
func streamPeers(info *jetstream.StreamInfo) []string {
	if info.Cluster == nil {
		return nil
	}
	peers := []string{info.Cluster.Leader}
	for _, p := range info.Cluster.Replicas {
		peers = append(peers, p.Name)
	}
	return slices.DeleteFunc(peers, func(s string) bool { return s == "" })
}

// serverSync asks every server (over a system-account connection) whether
// it syncs always, until each of want answered or timeout.
func serverSync(ctx context.Context, sys *nats.Conn, want []string, timeout time.Duration) (map[string]bool, error) {
	inbox := sys.NewRespInbox()
	sub, err := sys.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := sys.PublishRequest("$SYS.REQ.SERVER.PING.VARZ", inbox, nil); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got := map[string]bool{}
	for {
		done := len(want) > 0
		for _, w := range want {
			if _, ok := got[w]; !ok {
				done = false
			}
		}
		if done {
			return got, nil
		}
		m, err := sub.NextMsgWithContext(ctx)
		switch {
		case err == nil:
		case errors.Is(err, nats.ErrNoResponders):
			// The servers answer system requests from their system
			// account only: anyone else's find no one listening.
			return got, ErrNotSystemUser
		case len(got) > 0:
			return got, nil // the caller names a server that did not answer
		default:
			return got, fmt.Errorf("%w: no server said how it syncs within %v: %w", ErrServerSync, timeout, err)
		}
		var v varz
		if json.Unmarshal(m.Data, &v) != nil || v.Server.Name == "" {
			continue
		}
		got[v.Server.Name] = v.Data.JetStream.Config != nil && v.Data.JetStream.Config.SyncAlways
	}
}
