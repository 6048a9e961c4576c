# Everything here runs on a fresh machine with Go and, for the tests, the Debian package
# redis-server (.ci/run installs it when missing).
GO ?= go
GOFILES = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go')

.PHONY: help test lint cover simulate

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

test: lint ## vet, gofmt, then every test with -race (needs redis-server: a missing one fails)
	REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...

lint: ## go vet and a gofmt check
	$(GO) vet ./...
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt wants to rewrite:"; echo "$$out"; exit 1; fi

cover: ## tests with a coverage profile, summarised per function
	REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -1

simulate: ## run the simulator's scenario catalog in real time (no servers needed)
	$(GO) run ./cmd/redlock simulate
