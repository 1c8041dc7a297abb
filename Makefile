# logbook — build, test, check, bench, fuzz.
GO      ?= go
BIN     := bin/logbook
PKGS    := ./...

.PHONY: build demo test test-browser docs-screenshots soak soak-stdio soak-jetstream soak-faults soak-faults-skipped bin/logbook-soak bin/logbook-race check bench bench-peers bench-server fuzz e2e-deps clean

build:
	$(GO) build -o $(BIN) ./cmd/logbook

# demo: an agent session through `logbook serve` on the default ledger
# (.logbook/ledger.db), then the auditor's checks of it.
demo: build
	bash cmd/logbook/demo.sh

test: build e2e-deps
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# test-browser: the web console in headless Chromium (Debian's chromium
# package at /usr/bin/chromium; the test skips without it), every page of a
# populated ledger, screenshots in bin/screenshots. `make test` skips it.
test-browser:
	LOGBOOK_BROWSER=1 LOGBOOK_SCREENSHOTS=$(CURDIR)/bin/screenshots $(GO) test -count=1 -run TestBrowser -v ./server/console/

# docs-screenshots: the README's pictures of the console, from test-browser's.
docs-screenshots: test-browser
	cp bin/screenshots/board.png docs/console-board.png
	cp bin/screenshots/tasks-T-0002.png docs/console-task.png

# soak: the soak harness (cmd/logbook-soak), then the crash-and-fault
# suite long (hundreds of SIGKILLs of writing agents, full disk, foreign
# locks, swapped files, 25 SIGKILLs of logbook server under load, five
# rounds of JetStream faults: TestFaultsLoseNothing); `make test` runs that
# suite short. The harness's runs take SOAK_DUR of faults
# each (about a minute more for start-up, calm and checks; SOAK_SERVER_DUR
# for the stdio run through a logbook server): make soak-stdio SOAK_DUR=30m.
# SOAK_RACE=1: the harness drives bin/logbook-race, logbook built with the
# race detector (each run fails on a DATA RACE in any process's stderr);
# slower, so fewer calls. A run that fails keeps its directory (named at its
# start) and prints the seed: rerun it with bin/logbook-soak stdio -seed N
# (or jetstream; -h lists the flags). make -k soak goes on past a failed run.
SOAK_DUR        ?= 3m
SOAK_SERVER_DUR ?= 1m
SOAK_RACE       ?=
SOAK_BIN        := $(if $(SOAK_RACE),bin/logbook-race,$(BIN))

soak: soak-stdio soak-jetstream $(if $(filter 0,$(shell id -u)),soak-faults,soak-faults-skipped) e2e-deps
	LOGBOOK_SOAK=1 $(GO) test -count=1 -timeout 60m -run 'TestFault|TestE2ELedgerSwapped|TestE2EDamaged|TestAuditWhileAgentsWrite|TestServerKill9' ./cmd/logbook/ ./ledger/jetstream/

# soak-stdio: agents over stdio (logbook serve) SIGKILLed, SIGTERMed,
# SIGSTOPped and cut off at random beside rebuild, snapshot and token add
# (also killed), then the same through a logbook server SIGKILLed at random.
soak-stdio: build bin/logbook-soak $(if $(SOAK_RACE),bin/logbook-race)
	bin/logbook-soak stdio -bin $(SOAK_BIN) -dur $(SOAK_DUR) -kill-mode mix
	bin/logbook-soak stdio -bin $(SOAK_BIN) -dur $(SOAK_SERVER_DUR) -kill-mode mix -server

# soak-faults (root): the stdio soak with reboots (every logbook process
# SIGKILLed, the next ones started in another boot, as the kernel's boot id
# tells them: the journal recovered), then with the ledger file, and its
# directory, made read-only and writable again (logbook run as nobody).
soak-faults: build bin/logbook-soak $(if $(SOAK_RACE),bin/logbook-race)
	bin/logbook-soak stdio -bin $(SOAK_BIN) -dur $(SOAK_SERVER_DUR) -kill-mode mix -reboots 6
	bin/logbook-soak stdio -bin $(SOAK_BIN) -dur $(SOAK_SERVER_DUR) -kill-mode mix -perm file
	bin/logbook-soak stdio -bin $(SOAK_BIN) -dur $(SOAK_SERVER_DUR) -kill-mode mix -perm dir

soak-faults-skipped:
	@echo "soak-faults skipped: it needs root (a mount namespace per process of another boot; logbook run as the user nobody)"

# soak-jetstream: three logbook server nodes on three nats-server processes,
# nodes and servers killed, stopped and partitioned.
soak-jetstream: build bin/logbook-soak bin/nats-server $(if $(SOAK_RACE),bin/logbook-race)
	bin/logbook-soak jetstream -bin $(SOAK_BIN) -dur $(SOAK_DUR)

bin/logbook-soak:
	$(GO) build -o $@ ./cmd/logbook-soak

bin/logbook-race:
	$(GO) build -race -o $@ ./cmd/logbook

# bin/nats-server: the NATS server of the module go.mod requires (the one the
# tests run in-process), built from the module cache: nothing is downloaded
# that go.sum does not pin.
bin/nats-server: go.mod go.sum
	$(GO) build -o $@ github.com/nats-io/nats-server/v2

# The TypeScript SDK client of the end-to-end tests (cmd/logbook/e2e), from
# its package-lock.json; go test itself never uses the network.
e2e-deps:
	npm ci --prefix cmd/logbook/e2e --no-audit --no-fund

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	GOOS=freebsd $(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	$(MAKE) test

# bench runs the ledger benchmarks BENCH_RUNS times over (about 40 s a run;
# the first run ever also builds 100k- and 1M-event ledgers, cached in
# $TMPDIR/logbook-bench) and prints a table of the medians: ns/op, events/s,
# speed relative to the raw bbolt baseline measured in the same runs, and the
# target. Whole runs are repeated, rather than -count, so that a benchmark
# and its baseline alternate and share the machine's ups and downs. go
# test's own output is kept in $(BENCH_OUT), for benchstat.
BENCH_OUT  ?= bin/bench.txt
BENCH_RUNS ?= 3

bench:
	@mkdir -p $(dir $(BENCH_OUT))
	@: > $(BENCH_OUT); for i in $$(seq $(BENCH_RUNS)); do \
		echo "go test -bench . ./ledger/boltstore/ >> $(BENCH_OUT) (run $$i of $(BENCH_RUNS))"; \
		$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 20m ./ledger/boltstore/ >> $(BENCH_OUT) 2>&1 \
			|| { cat $(BENCH_OUT); exit 1; }; \
	done
	@awk "$$BENCHTABLE" $(BENCH_OUT)
	@echo; echo "go test -bench BenchmarkStdio ./cmd/logbook/: the real binary over real stdio (targets: p50 <= 2000 µs and p99 <= 10000 µs per tool, >= 2000 calls/s with 8 in flight, <= 200 ms start-up at 1M events)"
	@$(GO) test -run '^$$' -bench BenchmarkStdio -count 1 -timeout 20m ./cmd/logbook/ > $(BENCH_OUT:.txt=-stdio.txt) 2>&1 \
		|| { cat $(BENCH_OUT:.txt=-stdio.txt); exit 1; }
	@grep '^Benchmark' $(BENCH_OUT:.txt=-stdio.txt)
	@echo; echo "go test -bench 'BenchmarkServerCall/(task_create|thought_record)' ./mcp/: a write call in process, the collector as logbook serve sets it (targets: cpu-µs/op <= 150, B/op <= 30000)"
	@$(GO) test -run '^$$' -bench 'BenchmarkServerCall/(task_create|thought_record)' -benchmem -benchtime 5000x -count 1 -timeout 10m ./mcp/ > $(BENCH_OUT:.txt=-call.txt) 2>&1 \
		|| { cat $(BENCH_OUT:.txt=-call.txt); exit 1; }
	@grep '^Benchmark' $(BENCH_OUT:.txt=-call.txt)
	@echo; echo "go test -bench BenchmarkServerCallFloor ./mcp/: the floor under that row: one 300-byte write made durable (pwrite and fdatasync) and nothing else, one durable commit of one 400-byte event in raw bbolt (two fdatasyncs) and in the ledger (the journal: one)"
	@$(GO) test -run '^$$' -bench 'BenchmarkServerCallFloor' -benchmem -benchtime 5000x -count 1 -timeout 10m ./mcp/ > $(BENCH_OUT:.txt=-floor.txt) 2>&1 \
		|| { cat $(BENCH_OUT:.txt=-floor.txt); exit 1; }
	@grep '^Benchmark' $(BENCH_OUT:.txt=-floor.txt)
	@echo; echo "go test -bench 'Benchmark(Verify|VerifyChain|Rebuild|Snapshot)$$' ./cmd/logbook/: the auditor's commands on a 1M-event ledger (targets: verify x-sha256sum <= 2 (cpu-x-sha256sum is the steadier figure on a loaded machine), chain-events/s >= 1000000, rebuild events/s >= 500000, peak-RSS-MB <= 100)"
	@$(GO) test -run '^$$' -bench 'Benchmark(Verify|VerifyChain|Rebuild|Snapshot)$$' -benchtime 1x -count 1 -timeout 30m ./cmd/logbook/ > $(BENCH_OUT:.txt=-audit.txt) 2>&1 \
		|| { cat $(BENCH_OUT:.txt=-audit.txt); exit 1; }
	@grep '^Benchmark' $(BENCH_OUT:.txt=-audit.txt)

# bench-peers prints issue 9's peer rows: logbook, a Colibri-style SQLite MCP
# server (Node, better-sqlite3: WAL, synchronous=FULL, hash-chained rows) and
# the reference memory server, driven by one TypeScript SDK client over stdio
# in alternating rounds on fresh stores (bench/peers; about 10 minutes). A
# quicker run: BENCH_PEERS_ROUNDS=3 BENCH_PEERS_THOUGHTS=10000 make bench-peers.
# Its npm packages are installed by npm ci whenever its package-lock.json is
# newer than the install; better-sqlite3 then compiles SQLite (about 2 minutes
# of CPU) against the running node's own headers where they are installed, so
# node-gyp downloads nothing. Not part of `make test`.
BENCH_PEERS_OUT ?= bin/bench-peers.json
NODE_PREFIX := $(shell node -p "require('path').resolve(process.execPath, '../..')" 2>/dev/null)

bench-peers: build bench/peers/node_modules/.package-lock.json
	@mkdir -p $(dir $(BENCH_PEERS_OUT))
	@node --test bench/peers/smoke.test.mjs > $(BENCH_PEERS_OUT:.json=-smoke.txt) 2>&1 \
		|| { cat $(BENCH_PEERS_OUT:.json=-smoke.txt); exit 1; }
	node bench/peers/bench.mjs --bin $(BIN) --out $(BENCH_PEERS_OUT)

bench/peers/node_modules/.package-lock.json: bench/peers/package.json bench/peers/package-lock.json
	$(if $(wildcard $(NODE_PREFIX)/include/node/node.h),npm_config_nodedir=$(NODE_PREFIX)) npm ci --prefix bench/peers --no-audit --no-fund
	@touch $@

# BENCHTABLE is the awk program behind `make bench`. Each benchmark's
# baseline: Append and RawBoltPut1Reopen → RawBoltPut1,
# AppendParallel → RawBoltPut64,
# Verify/x → RawBoltScan/x, any .../view → RawBoltGet/view, any .../tx →
# RawBoltGet/tx. Every figure is the median over the runs; "vs raw" is
# events/s over the baseline's events/s where both report it, otherwise the
# baseline's ns/op over this one's.
define BENCHTABLE
/^(goos|goarch|cpu):/ { if (!seen[$$0]++) print; next }
/^Benchmark/ {
	name = $$1; sub(/-[0-9]+$$/, "", name); sub(/^Benchmark/, "", name)
	if (!known[name]++) order[++n] = name
	for (i = 3; i < NF; i += 2) { u = $$(i+1); runs[name, u, ++nruns[name, u]] = $$i }
}
# median of the runs of name in unit u, "" if none
function med(name, u,   k, m, j, x, a) {
	m = nruns[name, u]
	if (m == 0) return ""
	for (k = 1; k <= m; k++) {
		x = runs[name, u, k] + 0
		for (j = k - 1; j >= 1 && a[j] > x; j--) a[j+1] = a[j]
		a[j+1] = x
	}
	return m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
}
function base(name,   b) {
	if (name == "Append") return "RawBoltPut1"
	if (name == "AppendParallel") return "RawBoltPut64"
	if (name == "RawBoltPut1Reopen") return "RawBoltPut1"
	if (name ~ /^RawBolt/) return ""
	if (name ~ /^Verify\//) { b = name; sub(/^Verify/, "RawBoltScan", b); return b }
	if (name ~ /\/view$$/) return "RawBoltGet/view"
	if (name ~ /\/tx$$/) return "RawBoltGet/tx"
	return ""
}
function target(name, ns, ev, r) {
	if (name == "Append") return verdict(r >= 0.8, ">= 0.8x raw")
	if (name == "AppendParallel") return verdict(ev >= 20000, ">= 20000 ev/s; ") verdict(r >= 0.5, ">= 0.5x raw")
	if (name ~ /^Verify\//) return verdict(ev >= 1000000, ">= 1M ev/s")
	if (name ~ /^RangeRoot\/unaligned/) return "O(n): none"
	if (name ~ /^(InclusionProof|ConsistencyProof|RangeRoot)\//) return verdict(ns <= 50000, "<= 50us")
	return ""
}
function verdict(ok, what) { return (ok ? "ok   " : "MISS ") what }
END {
	w = 10
	for (i = 1; i <= n; i++) if (length(order[i]) > w) w = length(order[i])
	printf "\n%-*s %14s %12s %8s  %-26s %s\n", w, "benchmark", "ns/op", "events/s", "vs raw", "raw baseline", "target"
	for (i = 1; i <= n; i++) {
		name = order[i]; b = base(name)
		ns = med(name, "ns/op"); ev = med(name, "events/s")
		r = ""
		if (b != "" && med(b, "ns/op") != "") {
			if (ev != "" && med(b, "events/s") != "") r = ev / med(b, "events/s")
			else r = med(b, "ns/op") / ns
		}
		printf "%-*s %14.0f %12s %8s  %-26s %s\n", w, name, ns, \
			(ev == "" ? "-" : sprintf("%.0f", ev)), (r == "" ? "-" : sprintf(r < 0.1 ? "%.3fx" : "%.2fx", r)), \
			(b == "" ? "-" : b), target(name, ns, ev, r)
	}
}
endef
export BENCHTABLE

# bench-server: logbook server over Streamable HTTP on loopback (go-sdk
# client) beside embedded stdio in the same run: p50/p99 per tool, calls/s
# with 16 clients x 8 in flight (goals: p50 <= 1 ms, >= 10,000 calls/s).
bench-server:
	@mkdir -p bin
	@$(GO) test -run '^$$' -bench BenchmarkServer -count 1 -timeout 30m ./cmd/logbook/ > bin/bench-server.txt 2>&1 \
		|| { cat bin/bench-server.txt; exit 1; }
	@grep '^Benchmark' bin/bench-server.txt

fuzz:
	$(GO) test ./ledger/ -run '^$$' -fuzz FuzzDecodeEvent -fuzztime 30s
	$(GO) test ./ledger/ -run '^$$' -fuzz FuzzVerifyInclusion -fuzztime 30s
	$(GO) test ./ledger/ -run '^$$' -fuzz FuzzVerifyConsistency -fuzztime 30s

clean:
	rm -rf bin
