# logbook — build, test, check, bench, fuzz.
GO      ?= go
BIN     := bin/logbook
PKGS    := ./...

.PHONY: build test check bench fuzz e2e-deps clean

build:
	$(GO) build -o $(BIN) ./cmd/logbook

test: build
	$(GO) test -race -count=1 $(PKGS)

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	$(MAKE) test

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./ledger/ > /dev/null
	$(GO) run ./cmd/benchtable

fuzz:
	$(GO) test ./ledger/ -run '^$$' -fuzz FuzzDecodeEvent -fuzztime 30s
	$(GO) test ./ledger/ -run '^$$' -fuzz FuzzVerifyInclusion -fuzztime 30s
	$(GO) test ./ledger/ -run '^$$' -fuzz FuzzVerifyConsistency -fuzztime 30s

clean:
	rm -rf bin
