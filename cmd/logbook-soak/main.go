//go:build linux

// Command logbook-soak is the crash-and-fault soak of logbook, run from
// outside: it drives the built binaries (bin/logbook, and bin/nats-server for
// the JetStream soak) as agents and operators would, kills them at random,
// and then checks the ledgers against what every agent was told. It imports
// no logbook package, so what it checks is the product's surface alone.
//
//	logbook-soak stdio [flags]      agents over stdio (logbook serve), SIGKILLs
//	logbook-soak jetstream [flags]  three logbook server nodes on a NATS cluster
//
// `make soak` runs both, a few minutes each. The exit code is 0 if every
// check passed, 1 if one failed (each failure printed on a line beginning
// FAIL), 2 if the run could not start.
package main

import (
	"fmt"
	"os"

	"github.com/logbook-dev/logbook/cmd/logbook-soak/jetstream"
	"github.com/logbook-dev/logbook/cmd/logbook-soak/stdio"
)

const usage = `usage: logbook-soak stdio [flags]       agents over stdio, processes killed at random
       logbook-soak jetstream [flags]   logbook server nodes on a 3-server NATS cluster, faults injected
Run a subcommand with -h for its flags.
`

func main() {
	stdio.ExecInBoot()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "stdio":
		os.Exit(stdio.Run(os.Args[2:]))
	case "jetstream":
		os.Exit(jetstream.Run(os.Args[2:]))
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "logbook-soak: unknown subcommand %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
