package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// their settings: without Options.SystemConn it warns, loudly. A server
// that says it does not is refused. One that says nothing (stopped, cut
// off) cannot be checked: while fewer than a majority of the servers
// holding the stream answered (a cluster still starting), they are asked
// again for up to OpenWait; then a minority that did not answer is warned
// of, loudly, as a stream with no system connection is: a node must be
// able to start while one server of three is down, as the stream works on.
func (r *Replica) checkSync(ctx context.Context, info *jetstream.StreamInfo) error {
	peers := streamPeers(info)
	if r.opts.SystemConn == nil {
		r.opts.Logf("WARNING: logbook cannot check that %s run with `jetstream { sync_interval: always }`: "+
			"give a system-account connection to check it. Without it, NATS acknowledges writes before they are on disk and a power loss on a "+
			"quorum loses acknowledged ledger events.", holders(r.opts.Stream, peers))
		return nil
	}
	giveUp := time.Now().Add(r.opts.OpenWait)
	var sync map[string]bool
	var silent []string
	for {
		var err error
		sync, err = serverSync(ctx, r.opts.SystemConn, peers, r.opts.Timeout)
		if errors.Is(err, ErrNotSystemUser) {
			return err
		}
		if len(peers) == 0 { // not clustered: every server that answered
			for name := range sync {
				peers = append(peers, name)
			}
		}
		silent = slices.DeleteFunc(slices.Clone(peers), func(p string) bool { _, ok := sync[p]; return ok })
		if err == nil && len(peers) > 0 && 2*len(silent) < len(peers) {
			break // a majority answered
		}
		if (err != nil && !errors.Is(err, context.DeadlineExceeded)) || ctx.Err() != nil || time.Now().After(giveUp) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: servers %v holding stream %s did not say how they sync", ErrServerSync, silent, r.opts.Stream)
		}
		r.opts.Logf("stream %s: servers %v of %v did not say how they sync (a cluster still starting?); asking again", r.opts.Stream, silent, peers)
	}
	for _, p := range peers {
		if always, ok := sync[p]; ok && !always {
			return fmt.Errorf("%w: server %s holding stream %s does not run with `jetstream { sync_interval: always }`", ErrServerSync, p, r.opts.Stream)
		}
	}
	if len(silent) > 0 {
		r.opts.Logf("WARNING: NATS servers %v holding stream %s did not say how they sync within %v (stopped or cut off?): logbook cannot check that they run "+
			"with `jetstream { sync_interval: always }`; the others (%d) do. Without it, NATS acknowledges writes before they are on disk and a power loss on a "+
			"quorum loses acknowledged ledger events.", silent, r.opts.Stream, r.opts.Timeout, len(peers)-len(silent))
	}
	return nil
}

// streamPeers are the names of the servers holding the stream.
// holders names the servers holding stream, peers, in a warning: a stream
// not clustered names none, and is held by the one server.
func holders(stream string, peers []string) string {
	if len(peers) == 0 {
		return "the NATS server holding stream " + stream
	}
	return fmt.Sprintf("the NATS servers holding stream %s (%s)", stream, strings.Join(peers, ", "))
}

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
