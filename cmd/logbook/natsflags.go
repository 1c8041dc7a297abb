package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/ledger/jetstream"
	"github.com/nats-io/nats.go"
)

// natsFlags are the flags of every command that reaches a JetStream-backed
// ledger: the stream, the servers' credentials and TLS, and a system-account
// user to check the servers' sync setting with. Passwords come from the
// environment only, never argv.
type natsFlags struct {
	stream            *string
	replicas          *int
	allowUnreplicated *bool
	creds, user       *string
	tlsCA             *string
	tlsCert, tlsKey   *string
	sysCreds, sysUser *string
	password          string
	sysPassword       string
}

func addNATSFlags(e *env, fs *flag.FlagSet) *natsFlags {
	return &natsFlags{
		stream:            fs.String("stream", "", "JetStream stream holding the ledger (required; subject logbook.<stream>.events)"),
		replicas:          fs.Int("replicas", 3, "servers keeping the stream when it is created"),
		allowUnreplicated: fs.Bool("allow-unreplicated", false, "accept a stream on fewer than 3 servers (loses events with a disk)"),
		creds:             fs.String("nats-creds", "", "NATS credentials file (JWT + nkey)"),
		user:              fs.String("nats-user", "", "NATS user (password from env LOGBOOK_NATS_PASSWORD)"),
		tlsCA:             fs.String("nats-tls-ca", "", "CA certificate file to verify the NATS servers with"),
		tlsCert:           fs.String("nats-tls-cert", "", "client certificate file for NATS (with --nats-tls-key)"),
		tlsKey:            fs.String("nats-tls-key", "", "client key file for NATS"),
		sysCreds:          fs.String("nats-sys-creds", "", "system-account credentials file: check every server syncs always"),
		sysUser:           fs.String("nats-sys-user", "", "system-account user (password from env LOGBOOK_NATS_SYS_PASSWORD): check every server syncs always"),
		password:          e.getenv("LOGBOOK_NATS_PASSWORD"),
		sysPassword:       e.getenv("LOGBOOK_NATS_SYS_PASSWORD"),
	}
}

// isNATS tells whether a store address names NATS servers.
func isNATS(addr string) bool {
	return strings.HasPrefix(addr, "nats://") || strings.HasPrefix(addr, "tls://")
}

// connOptions are nats.go options for a user (creds file or user/password)
// with the TLS flags.
func (f *natsFlags) connOptions(name, creds, user, password string) []nats.Option {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	if user != "" {
		opts = append(opts, nats.UserInfo(user, password))
	}
	if *f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(*f.tlsCA))
	}
	if *f.tlsCert != "" || *f.tlsKey != "" {
		opts = append(opts, nats.ClientCert(*f.tlsCert, *f.tlsKey))
	}
	return opts
}

// openReplica connects to the servers at urls (comma-separated) and opens
// the stream. The returned close ends the replica and its connections.
func (f *natsFlags) openReplica(ctx context.Context, cmd, urls string, log io.Writer) (*jetstream.Replica, func(), error) {
	if *f.stream == "" {
		return nil, nil, usageErr("%s: --stream is required with a NATS store", cmd)
	}
	nc, err := nats.Connect(urls, f.connOptions("logbook "+cmd, *f.creds, *f.user, f.password)...)
	if err != nil {
		return nil, nil, &exitError{exitUsage, fmt.Errorf("%s: connect to %s: %w", cmd, urls, err)}
	}
	var sys *nats.Conn
	if *f.sysCreds != "" || *f.sysUser != "" {
		if sys, err = nats.Connect(urls, f.connOptions("logbook "+cmd+" (sync check)", *f.sysCreds, *f.sysUser, f.sysPassword)...); err != nil {
			nc.Close()
			return nil, nil, &exitError{exitUsage, fmt.Errorf("%s: connect to %s as the system user: %w", cmd, urls, err)}
		}
	}
	rep, err := jetstream.Open(ctx, nc, jetstream.Options{
		Stream: *f.stream, Replicas: *f.replicas, AllowUnreplicated: *f.allowUnreplicated, SystemConn: sys,
		Logf: func(format string, args ...any) { fmt.Fprintf(log, cmd+": "+format+"\n", args...) },
	})
	closeAll := func() {
		if rep != nil {
			rep.Close()
		}
		if sys != nil {
			sys.Close()
		}
		nc.Close()
	}
	if err != nil {
		closeAll()
		return nil, nil, &exitError{exitUsage, fmt.Errorf("%s: %w", cmd, err)}
	}
	return rep, closeAll, nil
}
