package jetstream

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenRefusesDeniedUser: a NATS user denied a subject a ledger needs
// (appending to the stream, reading it directly or from its leader, its
// stream info, the answers to its requests) is refused at Open with
// ErrDenied naming the subject, and the probe of the stream's subject
// stores nothing. (A user denied the stream's subject opened it, and every
// append waited out ResolveWithin before failing with ErrAppendUnknown,
// though nothing could land; one denied the stream info asked again for
// OpenWait and failed "context deadline exceeded"; one denied the reads
// opened, then failed every catch-up after ResolveWithin.)
func TestOpenRefusesDeniedUser(t *testing.T) {
	c := sharedCluster(t)
	opts := Options{Stream: "rights", OpenWait: 5 * time.Second}
	anc := c.connect(t, 0, "app")
	allowed := openReplica(t, anc, opts, hooks{})
	for _, tc := range []struct{ user, subject string }{
		{"noappend", Subject("rights")},
		{"nodirect", "$JS.API.DIRECT.GET.rights"},
		{"noleaderget", "$JS.API.STREAM.MSG.GET.rights"},
		{"noinfo", "$JS.API.STREAM.INFO.rights"},
		{"noanswers", "_INBOX."},
	} {
		nc := c.connect(t, 1, tc.user)
		r, err := open(context.Background(), nc, Options{Stream: "rights", OpenWait: 5 * time.Second, Logf: func(string, ...any) {}}, hooks{})
		if err == nil {
			r.Close()
		}
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.subject) || !strings.Contains(err.Error(), "allow its user") {
			t.Errorf("user %s: open: %v; want ErrDenied naming %s and what to allow", tc.user, err, tc.subject)
		}
	}
	info, err := allowed.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 || info.State.LastSeq != 0 {
		t.Fatalf("the stream holds %d messages (last seq %d) after the opens' probes; want none", info.State.Msgs, info.State.LastSeq)
	}
	n := openNode(t, filepath.Join(t.TempDir(), "allowed.db"), anc, allowed)
	if seq, err := n.appendSeq("alice", "after the probes"); err != nil || seq != 1 {
		t.Fatalf("append by the allowed user: seq %d, %v; want 1", seq, err)
	}
}
