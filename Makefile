# Everything here runs on a fresh machine with Go. The tests also need the Debian packages
# redis-server, faketime and postgresql: make test installs them first when they are missing
# and it runs as root where apt-get is, and otherwise stops saying what to run (.ci/deps).
GO ?= go
GOFILES = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go')
MODULES = . redlockotel redlockrueidis redlockvalkey redlockgocron redlockfence examples/seckill internal/mixednodes bench
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: help deps test test-modules test-catalog-real catalog vet lint cover simulate simulate-real bench bench-check bench-report

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## install what the tests need (redis-server, faketime, postgresql) with apt-get when missing and run as root; otherwise say what to run
	./.ci/deps

test: deps vet bench-check ## the packages the tests need (make deps), vet, gofmt, every test with -race (the adapter modules', redlockotel's and redlockgocron's too; the simulator's whole catalog among them), then the catalog's rows on real servers; about 6 minutes on 2 idle cores
	REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -short -count=1 ./...
	$(MAKE) --no-print-directory -j2 --output-sync=target test-modules test-catalog-real

test-modules: ## the tests of the modules beside the main one, one after another, with -race
	cd redlockotel && $(GO) test -race -count=1 ./...
	cd redlockrueidis && REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...
	cd redlockvalkey && REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...
	cd internal/mixednodes && REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...
	cd redlockgocron && REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...
	cd redlockfence && REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...
	cd examples/seckill && REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 ./...

test-catalog-real: ## the simulator's catalog rows on real redis-server processes
	REDLOCK_REQUIRE_REDIS=1 $(GO) test -count=1 -run '^TestCatalogReal$$' ./simulate

catalog: ## the simulator's catalog at full length, without -race: every safe row over 2,000 critical sections (or its own count), three seeds each (~5 min on 2 cores)
	$(GO) test -count=1 -timeout 20m -run '^TestCatalog$$' ./simulate

vet: ## go vet on every module (the main one, redlockotel, the adapter modules, redlockgocron, redlockfence, the seckill example, internal/mixednodes, bench) and a gofmt check
	@for m in $(MODULES); do echo "vet $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt wants to rewrite:"; echo "$$out"; exit 1; fi

lint: vet ## make vet, then staticcheck (pinned) on every module; run it before a commit (~7 min with an empty build cache, so make test leaves it out)
	@for m in $(MODULES); do echo "staticcheck $$m"; (cd $$m && $(STATICCHECK) ./...) || exit 1; done

cover: ## tests with a coverage profile, summarised per function
	REDLOCK_REQUIRE_REDIS=1 $(GO) test -race -count=1 -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -1

simulate: ## run the simulator's scenario catalog in real time (no servers needed)
	$(GO) run ./cmd/redlock simulate

simulate-real: ## the same catalog on redis-server processes with real faults (needs redis-server and faketime)
	$(GO) run ./cmd/redlock simulate -backend real

bench-check: ## vet and compile the bench module (its own go.mod) and run its tests: redsync's exclusion with redlock on one key, benchreport's round-by-round targets; runs no benchmark
	cd bench && $(GO) vet ./... && $(GO) test -race -count=1 ./...

bench: ## benchmarks beside redsync, redislock, rueidislock and etcd in interleaved rounds; writes bench/BENCHMARKS.md (~17 min: 8 rounds of ~2 min, a third of each the gray-failure case)
	cd bench && GO=$(GO) ./run.sh

bench-report: ## rewrite bench/BENCHMARKS.md from the results of the last make bench, running nothing
	cd bench && $(GO) run ./cmd/benchreport -dir results -notes limits.md -out BENCHMARKS.md -svg chart.svg
