#!/usr/bin/env bash
# make bench: every case in interleaved rounds (one pass over all cases a round, so that a noisy
# minute on the shared machine touches every library alike, rather than five runs of one case
# in a row), then benchstat, then BENCHMARKS.md and its chart from those results.
#
# ROUNDS (default 8) sets the number of rounds; about 2 min each on 2 cores, 40 s of it the
# gray-failure case (9 windows of 4 s), 20 s the leader election's fail-overs (10 crashes with a
# 1 s ttl, for each library) and 14 s the held cases (windows of 2 s and 5 s). The fail-over case measures etcd beside this library when etcd is installed
# (apt-get install -y etcd-server: Debian's); without it, it skips etcd and says so.
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
ROUNDS=${ROUNDS:-8}
BENCHSTAT=${BENCHSTAT:-"$GO run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"}

# case pattern, then -benchtime: a fixed number of ops, so that the libraries of a case get
# the same sample for their percentiles, except redsync with a slow node, which waits for it
# (85 ms an op) and gets fewer; the contended cases (BenchmarkContended, and BenchmarkRueidis's
# mode=contended) are one 2 s window an op, the gray-failure case one 4 s window an op, the
# fail-over case one election an op (200 fail-overs after a resign, 5 after a crash).
# benchreport compares the gray-failure and fail-over cases' variants and libraries within a
# round by the test process that ran them: keep each one pattern, one process a round.
cases=(
	'^BenchmarkUncontended$' 1000x
	'^BenchmarkSlowNode$/^impl=(floor|redlock|redsync-failfast)$' 600x
	'^BenchmarkSlowNode$/^impl=redsync$' 100x
	'^BenchmarkContended$' 1x
	'^BenchmarkHeld$' 1x
	'^BenchmarkNodes$' 1000x
	'^BenchmarkCluster$' 1000x
	'^BenchmarkGrayFailure$' 1x
	'^BenchmarkRueidis$/^mode=(serial|g8|g64)$' 1000x
	'^BenchmarkRueidis$/^mode=contended$' 1x
	'^BenchmarkFailover$' 1x
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO test -c -o "$tmp/bench.test" .

raw=results/raw.txt
: >"$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
	echo "round $round of $ROUNDS" >&2
	for ((i = 0; i < ${#cases[@]}; i += 2)); do
		"$tmp/bench.test" -test.run '^$' -test.bench "${cases[i]}" -test.benchtime "${cases[i + 1]}" \
			-test.count 1 | tee -a "$raw" | grep -E '^Benchmark' >&2
	done
done

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
	echo "cores: $(nproc)"
	echo "os: $(uname -sr)"
	echo "go: $($GO version)"
	echo "redis: $(redis-server --version)"
	if command -v etcd >/dev/null; then echo "etcd: $(etcd --version | sed -n 's/^etcd Version: //p')"; else echo "etcd: not installed"; fi
	$GO list -m -f 'module: {{.Path}} {{.Version}}' github.com/go-redsync/redsync/v4 github.com/bsm/redislock github.com/redis/go-redis/v9 github.com/redis/rueidis github.com/valkey-io/valkey-go go.etcd.io/etcd/client/v3
	echo "load average (1, 5, 15 min) before: $load_before"
	echo "load average (1, 5, 15 min) after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "rounds: $ROUNDS"
	for ((i = 0; i < ${#cases[@]}; i += 2)); do echo "benchtime: ${cases[i]} ${cases[i + 1]}"; done
} >results/machine.txt

$BENCHSTAT -col '/impl@(floor redlock redsync redsync-failfast redislock-1node redlock-rueidis redsync-rueidis rueidislock etcd)' "$raw" >results/benchstat.txt
$GO run ./cmd/benchreport -dir results -notes limits.md -out BENCHMARKS.md -svg chart.svg
echo "wrote bench/BENCHMARKS.md and bench/chart.svg" >&2
