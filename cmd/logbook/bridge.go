package main

import (
	"context"
	"flag"
	"net/url"

	"github.com/logbook-dev/logbook/mcp"
)

// bridge is `logbook serve --connect URL`: the stdio face of a logbook
// server, for hosts that only launch stdio servers. Flags that configure a
// local ledger make no sense with it and are refused.
func bridge(ctx context.Context, e *env, fs *flag.FlagSet, connect, tokenEnv string) error {
	var clash string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "db", "agent", "project", "skills", "read-only", "lock-timeout":
			clash = f.Name
		}
	})
	if clash != "" {
		return usageErr("serve: --%s configures a local ledger; with --connect the server decides it", clash)
	}
	u, err := url.Parse(connect)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("serve: --connect %q is not an http(s) URL like http://127.0.0.1:7460/mcp", connect)
	}
	token := e.getenv(tokenEnv)
	if token == "" {
		return usageErr("serve: --connect needs a bearer token in $%s (logbook token add prints one)", tokenEnv)
	}
	log := newLogger(e)
	log.Info("bridging", "url", u.Redacted())
	err = mcp.Bridge(ctx, mcp.BridgeOptions{URL: connect, Token: token, Version: version, Logger: log}, e.stdin, e.stdout)
	if err != nil {
		return usageErr("serve: %v", err)
	}
	return nil
}
