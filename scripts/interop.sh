#!/usr/bin/env bash
# Interop check: goverbs against Linux Soft-RoCE (rdma_rxe) running the
# unmodified rdma-core tools in the lab VM of ../shared/interop. Every case
# runs in both directions (C tool as server with goverbs as client, and the
# reverse); a case passes when both sides exit 0, print sane results, and
# the guest's rxe saw no bad ICRC, unknown QP, sequence error or retry
# exhaustion. Needs root (the lab makes a network namespace and a VM); it
# is not part of CI. Usage: scripts/interop.sh [--keep]  (--keep: leave the
# lab VM running).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
lab=${LAB:-$root/../shared/interop/lab}
keep=${1:-}
work=$(mktemp -d /tmp/goverbs-interop.XXXXXX)
export PATH="/usr/local/go/bin:$PATH"

echo "building goverbs into $work"
(cd "$root" && CGO_ENABLED=0 go build -o "$work/goverbs" ./cmd/goverbs)
ln -s goverbs "$work/ibv_rc_pingpong"

"$lab" up >/dev/null
[[ $keep == --keep ]] || trap '"$lab" down >/dev/null 2>&1 || true' EXIT

# rxe counters that must not move because of us.
watched="rcvd_seq_err out_of_seq_request retry_exceeded_err retry_rnr_exceeded_err"

counter() { # counter NAME FILE
	grep -o "$1 [0-9]*" "$2" | awk '{print $2}' | head -n 1
}

rows=()
pass=0 fail=0

# check NAME LOG... : both logs hold the two result lines with equal byte
# counts.
results_ok() {
	local a b
	a=$(grep -Eo '^[0-9]+ bytes in [0-9.]+ seconds' "$1" | awk '{print $1}') || return 1
	b=$(grep -Eo '^[0-9]+ bytes in [0-9.]+ seconds' "$2" | awk '{print $1}') || return 1
	[[ -n $a && $a == "$b" ]] && grep -q 'usec/iter' "$1" && grep -q 'usec/iter' "$2"
}

# run_case TOOL DIRECTION ARGS... — DIRECTION "c-server" or "go-server".
run_case() {
	local tool=$1 dir=$2
	shift 2
	local args="$*" # on a line of its own: local expands all its words first
	local tag="${tool}_${dir}_$(echo "$args" | tr -c 'A-Za-z0-9' _)"
	local glog="$work/$tag.goverbs.log" clog="$work/$tag.rxe.log" grc=0 crc=0
	"$lab" exec 'dmesg -c >/dev/null' || true
	"$lab" exec 'rdma statistic show link rxe0/1' >"$work/$tag.before"
	if [[ $dir == c-server ]]; then
		"$lab" bg srv "$tool -g 1 $args"
		"$lab" wait-port 18515 30 >/dev/null
		"$lab" exec-host "timeout 120 $work/$tool -g 1 $args 10.77.0.2" >"$glog" 2>&1 || grc=$?
		"$lab" wait srv 60 >"$clog" 2>&1 || crc=$?
	else
		"$lab" exec-host "timeout 120 $work/$tool $args" >"$glog" 2>&1 &
		local bgpid=$!
		sleep 1.5
		"$lab" exec -t 90 "$tool -g 1 $args 10.77.0.1" >"$clog" 2>&1 || crc=$?
		wait "$bgpid" || grc=$?
	fi
	"$lab" exec 'rdma statistic show link rxe0/1' >"$work/$tag.after"
	"$lab" exec 'dmesg' >"$work/$tag.dmesg" || true

	local why=""
	((grc == 0)) || why+="goverbs exit $grc; "
	((crc == 0)) || why+="rxe tool exit $crc; "
	results_ok "$glog" "$clog" || why+="results missing or differ; "
	if grep -Eq 'bad ICRC|no qp matches' "$work/$tag.dmesg"; then
		why+="rxe kernel log: $(grep -Em1 'bad ICRC|no qp matches' "$work/$tag.dmesg"); "
	fi
	local c before after
	for c in $watched; do
		before=$(counter "$c" "$work/$tag.before")
		after=$(counter "$c" "$work/$tag.after")
		[[ ${before:-0} == "${after:-0}" ]] || why+="rxe $c ${before:-0}->${after:-0}; "
	done
	local rate
	rate=$(grep -Eo '[0-9.]+ usec/iter' "$glog" | head -n 1 || true)
	if [[ -z $why ]]; then
		rows+=("PASS  $tool  ${dir}  $args  (${rate:-?})")
		pass=$((pass + 1))
	else
		rows+=("FAIL  $tool  ${dir}  $args  -- ${why% } (logs: $work/$tag.*)")
		fail=$((fail + 1))
	fi
}

for dir in c-server go-server; do
	run_case ibv_rc_pingpong "$dir" -n 200
	run_case ibv_rc_pingpong "$dir" -n 200 -s 10000
	run_case ibv_rc_pingpong "$dir" -n 200 -s 1
	run_case ibv_rc_pingpong "$dir" -n 200 -e
done

echo
echo "interop matrix (rxe in the lab VM; C = rdma-core tool on rxe, Go = goverbs):"
printf '  %s\n' "${rows[@]}"
echo
echo "Not covered yet: perftest (ib_write_bw, ib_write_lat, ib_read_bw, ib_read_lat, ib_send_bw,"
echo "ib_send_lat, ib_atomic_bw, ib_atomic_lat) — goverbs has no perftest counterparts so far."
echo "$pass passed, $fail failed"
((fail == 0))
