#!/usr/bin/env bash
# pgo.sh — regenerates cmd/goverbs/default.pgo, the CPU profile that `go
# build` uses to optimise the goverbs command (Go's profile-guided
# optimisation, on by default for a main package holding default.pgo). It
# runs each perftest-compatible tool goverbs to goverbs over loopback, both
# sides writing a CPU profile (GOVERBS_CPUPROFILE), and merges them. Run it
# after the data path changes much: a stale profile still builds, it only
# helps less (doc/performance.md, "Profile-guided optimisation"). A profile
# is a sample, and a new one can do worse: compare the tools built with the
# old and the new (alternated runs) before committing it.
#
# Usage: scripts/pgo.sh        about 15 s; no root, no network but lo
#
# The client connects to 127.0.0.2, which the server takes as its RoCEv2
# address, and keeps 127.0.0.1 for its own; with two or more CPUs the two
# are pinned to different ones, as the benchmarks are.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/goverbs-pgo.XXXXXX)
trap 'rm -rf "$work"' EXIT

(cd "$root" && CGO_ENABLED=0 go build -o "$work/goverbs" ./cmd/goverbs)

srv=() cli=()
if command -v taskset >/dev/null && (($(nproc) >= 2)); then
	srv=(taskset -c 0) cli=(taskset -c 1)
fi

# Each workload the benchmarks measure (scripts/bench.sh), long enough for
# a few thousand samples a side.
runs=(
	"ib_write_lat -s 8 -n 100000"
	"ib_send_lat -s 8 -n 100000"
	"ib_read_lat -s 8 -n 50000"
	"ib_atomic_lat -n 50000"
	"ib_write_bw -s 8 -n 1000000"
	"ib_write_bw -s 4096 -n 200000"
	"ib_write_bw -s 65536 -n 20000"
	"ib_send_bw -s 65536 -n 20000"
	"ib_read_bw -s 65536 -n 20000"
	"ib_atomic_bw -n 200000"
)
port=18515
for run in "${runs[@]}"; do
	port=$((port + 1))
	read -ra args <<<"$run"
	GOVERBS_CPUPROFILE=$work/server-$port.prof "${srv[@]}" timeout 120 \
		"$work/goverbs" "${args[@]}" -p "$port" >"$work/server.out" 2>&1 &
	for _ in $(seq 50); do # until the server listens
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	if ! GOVERBS_CPUPROFILE=$work/client-$port.prof "${cli[@]}" timeout 120 \
		"$work/goverbs" "${args[@]}" -p "$port" 127.0.0.2 >"$work/client.out" 2>&1; then
		cat "$work/client.out" "$work/server.out" >&2
		echo "pgo.sh: $run failed" >&2
		exit 1
	fi
	wait
	echo "profiled $run"
done
go tool pprof -proto "$work"/*.prof >"$root/cmd/goverbs/default.pgo" 2>/dev/null
echo "wrote cmd/goverbs/default.pgo ($(wc -c <"$root/cmd/goverbs/default.pgo") bytes)"
