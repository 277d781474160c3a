#!/usr/bin/env bash
# bench.sh — goverbs' perftest-compatible tools against the machine's own
# limits and established software peers, measured side by side in one run
# (the targets of issue 10). Needs root (a private network namespace) and the
# reference suite ../shared/bench next to the repository root, whose helpers
# (lib.sh: vCPU probe, netns, apt, raw rows) and programs (go/: raw Go UDP,
# c/: the probe) it calls; UCX (ucx-utils) and libfabric (libfabric-bin) come
# from apt-get when missing, and a peer that cannot be had shows as "n/a".
# Not part of CI.
#
# Usage (as root): scripts/bench.sh      REPS=3 repetitions, ~3 min on a quiet machine
#         QUICK=1 scripts/bench.sh        one short repetition, ~35 s quiet, for testing
#                                         (both take 2-3 times as long while others compile)
#         REPS=5 scripts/bench.sh         more repetitions (figures are medians)
#
# Everything runs inside the private network namespace of lib.sh (only
# "lo"), servers pinned to CPU 0 and clients to CPU 1. goverbs' server takes
# the address its client reached, so a client is pointed at 127.0.0.2 (the
# concurrent pairs use 127.0.2.N and --addr 127.0.3.N). Before every figure
# the cache-line probe of ../shared/bench/c tells the vCPU mode ("near" or
# "far", see ../shared/bench/BASELINES.md), kept with the figure: a ratio
# means something only between figures taken in the same mode.
#
# It prints one table: each goverbs figure, its reference, the ratio, the
# target and whether it is met, then "N of M targets met". It exits 0
# whenever it could measure, whatever the verdict.
# shellcheck disable=SC2317 # the measuring functions run through lib.sh's measure
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$root/../shared/bench}
if [[ ! -f $bench/lib.sh || ! -d $bench/go || ! -d $bench/c ]]; then
	echo "bench.sh needs the reference suite ../shared/bench next to the repository root" >&2
	echo "(looked in $bench; set BENCH=/path/to/shared/bench to use another place)" >&2
	exit 1
fi
[[ $(id -u) == 0 ]] || { echo "bench.sh: run as root (network namespace, taskset)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$bench/lib.sh" # log, ensure_pkgs, setup_netns, inns, build_probe, probe_now, measure, record, machine_facts

QUICK=${QUICK:-}
REPS=${REPS:-3}
[[ -n $QUICK ]] && REPS=1
work=$(mktemp -d /tmp/goverbs-bench.XXXXXX)
RAW=$work/bench.raw
: >"$RAW"
T=(timeout 60)

ensure_pkgs gcc libc6-dev iproute2 util-linux || log "apt-get failed; using what is installed"
ensure_pkgs ucx-utils libfabric-bin || log "UCX or libfabric could not be installed; their figures show n/a"
command -v go >/dev/null || { echo "bench.sh: Go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }

log "building goverbs, the reference programs of $bench and the vCPU probe into $work and $BUILD"
(cd "$root" && CGO_ENABLED=0 go build -o "$work/goverbs" ./cmd/goverbs)
(cd "$root" && go test -c -o "$work/conn.test" ./conn) || log "the conn benchmarks did not build; the kernel floor shows n/a"
mkdir -p "$BUILD"
(cd "$bench/go" && go build -o "$BUILD/gobench" .) || log "the raw Go references did not build; they show n/a"
build_probe || log "the probe did not build; vCPU modes show ?"
G=$BUILD/gobench
GV=$work/goverbs
trap 'rm -f "$GV"' EXIT # the raw rows and tool outputs stay in $work
setup_netns

# Sizes of the runs: each goverbs run moves about a gigabyte or lasts about
# a second at today's speed, bounded by timeout(1) in any case.
if [[ -n $QUICK ]]; then
	N64=4000 N4=20000 N8=40000 NLAT=5000 NPAIR=1500 NUDP=3000 DUR=0.3 NUCX=2000 NFI=2000
else
	N64=15000 N4=80000 N8=150000 NLAT=20000 NPAIR=5000 NUDP=10000 DUR=1 NUCX=5000 NFI=5000
fi

# Each measurement gets ports of its own (TCP control channels, UCX and
# libfabric servers): $port up to $port + 9. measure runs its command in a
# pipeline, so the counter moves here, in run.
port=18600
run() {
	port=$((port + 10))
	measure "$@"
}
# wait_listen PORT PID: wait (~3 s at most) until something in the
# namespace listens on the TCP port; give up at once when the server PID
# has exited.
wait_listen() {
	for _ in $(seq 60); do
		inns ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# unblock HOST PORT: connect and hang up, so that a server whose client
# failed stops waiting.
unblock() { inns bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null || true; }

# counter NAME FILE: a counter from a "link goverbs0/1 name value ..." line
# (GOVERBS_COUNTERS=1), 0 if absent.
counter() {
	awk -v k="$1" '/^link /{for (i = 2; i < NF; i++) if ($i == k) {print $(i+1); exit}} END{}' "$2" | grep . || echo 0
}
# cpu FILE: user + system seconds that bash's time keyword wrote.
cpu() { awk '{s += $1 + $2} END{printf "%.3f", s}' "$1"; }

# gv KEY PAIRS TOOL ARGS...: run PAIRS goverbs server/client pairs of TOOL at
# once and print RESULT rows: the bandwidth (GB/s) and message rate summed
# over the clients, or a latency test's typical one-way µs; the CPU seconds
# of all processes per GB moved; and the counters behind retransmissions.
gv() {
	local key=$1 pairs=$2 tool=$3
	shift 3
	local d=$work/$key.$rep i p=() c=() pid ok=1 srvaddr cliarg
	mkdir -p "$d"
	for ((i = 1; i <= pairs; i++)); do
		(
			TIMEFORMAT='%U %S'
			{ time inns env GOVERBS_COUNTERS=1 "${T[@]}" taskset -c 0 "$GV" "$tool" -p $((port + i)) "$@" >"$d/s$i.out" 2>"$d/s$i.err"; } 2>"$d/s$i.cpu"
		) &
		p+=($!)
	done
	for ((i = 1; i <= pairs; i++)); do
		wait_listen $((port + i)) "${p[i - 1]}" || { log "  goverbs $key: server $i did not listen"; ok=0; }
	done
	for ((i = 1; i <= pairs; i++)); do
		srvaddr=127.0.0.2 cliarg=()
		((pairs > 1)) && srvaddr=127.0.2.$i cliarg=(--addr "127.0.3.$i")
		(
			TIMEFORMAT='%U %S'
			{ time inns env GOVERBS_COUNTERS=1 "${T[@]}" taskset -c 1 "$GV" "$tool" -p $((port + i)) "$@" "${cliarg[@]}" "$srvaddr" >"$d/c$i.out" 2>"$d/c$i.err"; } 2>"$d/c$i.cpu"
		) &
		c+=($!)
	done
	for ((i = 1; i <= pairs; i++)); do
		if ! wait "${c[i - 1]}"; then
			ok=0
			log "  goverbs $key: client $i failed: $(grep -v '^link ' "$d/c$i.err" | tail -n 1)"
			((pairs > 1)) && srvaddr=127.0.2.$i || srvaddr=127.0.0.2
			unblock "$srvaddr" $((port + i))
		fi
	done
	for pid in "${p[@]}"; do wait "$pid" || ok=0; done
	[[ $ok == 1 ]] || return 0
	local size iters a b bw=0 rate=0 lat="" bytes=0 cpus=0 retries=0 seqerr=0 pkts=0 x
	for ((i = 1; i <= pairs; i++)); do
		# BW line: bytes iters peak avg[MB/s] rate; latency line: bytes iters min max typical ...
		x=$(awk 'NF == 5 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {print $1, $2, $4, $5} NF == 9 && $1 ~ /^[0-9]+$/ {print $1, $2, "lat", $5}' "$d/c$i.out" | tail -n 1)
		[[ -n $x ]] || { log "  goverbs $key: no result line from client $i"; return 0; }
		read -r size iters a b <<<"$x"
		if [[ $a == lat ]]; then
			lat=$b
		else
			bw=$(awk -v s="$bw" -v a="$a" 'BEGIN{printf "%.6f", s + a * 1048576 / 1e9}')
			rate=$(awk -v s="$rate" -v b="$b" 'BEGIN{printf "%.6f", s + b}')
			bytes=$(awk -v s="$bytes" -v n="$size" -v i="$iters" 'BEGIN{printf "%.0f", s + n * i}')
		fi
		cpus=$(awk -v s="$cpus" -v a="$(cpu "$d/s$i.cpu")" -v b="$(cpu "$d/c$i.cpu")" 'BEGIN{printf "%.3f", s + a + b}')
		retries=$((retries + $(counter completer_retry_err "$d/c$i.err")))
		seqerr=$((seqerr + $(counter out_of_seq_request "$d/s$i.err") + $(counter duplicate_request "$d/s$i.err")))
		pkts=$((pkts + $(counter sent_pkts "$d/c$i.err")))
	done
	if [[ -n $lat ]]; then
		echo "RESULT $key $lat us"
		return 0
	fi
	echo "RESULT $key $bw GB/s"
	echo "RESULT ${key}_rate $rate Mmsg/s"
	awk -v c="$cpus" -v b="$bytes" -v k="$key" 'BEGIN{if (b > 0) printf "RESULT %s_cpu %.3f CPU-s/GB\n", k, c / (b / 1e9)}'
	echo "RESULT ${key}_retries $retries count"
	echo "RESULT ${key}_seqerr $seqerr count"
	echo "RESULT ${key}_pkts $pkts count"
}

# UCX: UCT over tcp on lo, one batch file for server and client (as
# ../shared/bench/peers.sh runs it); figures: p50 one-way latency, overall
# bandwidth (MiB/s converted to GB/s) and message rate.
ucx_batch=$work/ucx_tcp.txt
cat >"$ucx_batch" <<EOF
am_lat_8 -t am_lat -D short -s 8 -n $NUCX -w 500
put_lat_8 -t put_lat -D zcopy -s 8 -n $NUCX -w 500
am_bw_8 -t am_bw -D short -s 8 -n $((NUCX * 20)) -w 2000
am_bw_64k -t am_bw -D zcopy -s 65536 -n $NUCX -w 200
put_bw_64k -t put_bw -D zcopy -s 65536 -n $NUCX -w 200
EOF
# peer NAME SERVERLOG SERVER... -- CLIENT...: start a peer tool's server in
# the namespace, wait until it listens on $port, run its client and print
# what the client printed; nothing if the server did not start.
peer() {
	local name=$1 srvlog=$2 srv=()
	shift 2
	while [[ $# -gt 0 && $1 != -- ]]; do
		srv+=("$1")
		shift
	done
	shift
	inns "${srv[@]}" >"$srvlog" 2>&1 &
	local spid=$!
	if ! wait_listen "$port" "$spid"; then
		log "  $name: the server did not start"
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		return 0
	fi
	inns "$@" 2>&1 || log "  $name: client exit $?"
	wait "$spid" 2>/dev/null || true
}

ucx_tcp() {
	command -v ucx_perftest >/dev/null || return 0
	local env=(env UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n) out
	out=$(peer UCX "$work/ucx.srv.$rep" "${env[@]}" timeout 90 taskset -c 0 ucx_perftest -p "$port" -b "$ucx_batch" -x tcp -d lo -- \
		"${env[@]}" timeout 90 taskset -c 1 ucx_perftest 127.0.0.1 -p "$port" -b "$ucx_batch" -f -x tcp -d lo)
	echo "$out" >"$work/ucx.cli.$rep"
	echo "$out" | awk 'NF == 9 && $2 ~ /^[0-9]+$/ {
		if ($1 ~ /_lat_/) printf "RESULT ucx_tcp_%s %s us\n", $1, $3
		else { printf "RESULT ucx_tcp_%s %.4f GB/s\n", $1, $7 * 1.048576 / 1000; printf "RESULT ucx_tcp_%s_rate %.4f Mmsg/s\n", $1, $9 / 1e6 }
	}'
}

# kernel_floor: conn's BenchmarkSyscallPingPong, the one-way latency of the
# system calls alone (threads pinned to CPUs 0 and 1 by the benchmark):
# RC's request and ACK as one GSO send per message, and one datagram.
kernel_floor() {
	[[ -x $work/conn.test ]] || return 0
	inns "${T[@]}" "$work/conn.test" -test.run '^$' -test.bench SyscallPingPong -test.benchtime "${NUDP}x" 2>&1 |
		awk '/^BenchmarkSyscallPingPong/ {for (i = 1; i < NF; i++) if ($(i+1) == "ns/one-way") v = $i / 1000
			k = $1; sub(/^BenchmarkSyscallPingPong\//, "", k); sub(/-[0-9]+$/, "", k); gsub(/-/, "_", k)
			printf "RESULT kernel_%s_oneway %.3f us\n", k, v }'
}

# fi_tcp SIZE ITERS: libfabric fi_pingpong over the tcp provider (msg
# endpoints); figures: mean one-way latency and ping-pong bandwidth.
fi_tcp() {
	command -v fi_pingpong >/dev/null || return 0
	local size=$1 iters=$2 env=(env FI_LOG_LEVEL=warn)
	peer libfabric "$work/fi.srv.$size.$rep" "${env[@]}" timeout 60 taskset -c 0 fi_pingpong -p tcp -e msg -S "$size" -I "$iters" -B "$port" -- \
		"${env[@]}" timeout 60 taskset -c 1 fi_pingpong -p tcp -e msg -S "$size" -I "$iters" -P "$port" 127.0.0.1 |
		awk -v s="$size" 'NF == 8 && $7 ~ /^[0-9.]+$/ {
			printf "RESULT fi_tcp_msg_%s_lat %s us\n", s, $7; printf "RESULT fi_tcp_msg_%s_ppbw %.4f GB/s\n", s, $6 / 1000 }'
}

for rep in $(seq 1 "$REPS"); do
	log "repetition $rep/$REPS"
	# Each goverbs figure right before (or after) its reference, so that
	# both are likely taken in the same vCPU mode.
	log "  8 B latency: goverbs ib_write_lat and ib_send_lat (2 B, perftest's default), raw Go UDP busy-poll"
	run gv gv_write_lat_8 1 ib_write_lat -s 8 -n $NLAT
	run gv gv_send_lat_2 1 ib_send_lat -s 2 -n $NLAT
	run inns "${T[@]}" taskset -c 1 "$G" udppp -mode poll -size 8 -n $NUDP -t 2
	run kernel_floor
	log "  64 KiB: goverbs ib_write_bw (one pair, -q 4, 4 pairs), raw Go GSO+GRO at 4 KiB, UCX tcp (bandwidth and latency)"
	run gv gv_write_64k 1 ib_write_bw -s 65536 -n $N64 -N
	run inns "${T[@]}" taskset -c 1 "$G" udptput -mode gsobatch -rmode gro -size 4096 -dur $DUR
	run ucx_tcp
	run gv gv_write_64k_q4 1 ib_write_bw -s 65536 -n $((N64 / 4)) -q 4 -N
	run gv gv_write_64k_4pairs 4 ib_write_bw -s 65536 -n $NPAIR -N
	log "  4 KiB: goverbs ib_write_bw, raw Go sendmmsg"
	run gv gv_write_4k 1 ib_write_bw -s 4096 -n $N4 -N
	run inns "${T[@]}" taskset -c 1 "$G" udptput -mode batch -rmode batch -size 4096 -dur $DUR
	log "  8 B message rate: goverbs ib_write_bw, raw Go sendmmsg"
	run gv gv_write_8 1 ib_write_bw -s 8 -n $N8 -N
	run inns "${T[@]}" taskset -c 1 "$G" udptput -mode batch -rmode batch -size 8 -dur $DUR
	log "  libfabric tcp (msg) fi_pingpong: 8 B, 4 KiB, 64 KiB"
	run fi_tcp 8 $NFI
	run fi_tcp 4096 $NFI
	run fi_tcp 65536 $((NFI / 2))
done

# ------------------------------------------------------------------ report
# stat KEY: "median mode" over the repetitions ("-" when absent); the mode
# is near, far, both with counts, or ? without a probe.
stat() {
	awk -v k="$1" -v near="$NEAR_NS" '
	$2 == k && $3 != "NA" { v[++n] = $3 + 0; if ($5 == "NA" || $5 == "") u++; else if ($5 + 0 < near) a++; else b++ }
	END {
		if (!n) { print "- -"; exit }
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		mode = (a && !b && !u) ? "near" : (b && !a && !u) ? "far" : (u && !a && !b) ? "?" : sprintf("near%d/far%d", a, b)
		print m, mode
	}' "$RAW"
}
# total KEY: the sum over the repetitions (counters).
total() { awk -v k="$1" '$2 == k {s += $3; n++} END{if (n) print s; else print "-"}' "$RAW"; }
fmt() { awk -v v="$1" 'BEGIN{if (v == "-") print "n/a"; else if (v >= 100) printf "%.0f\n", v; else if (v >= 10) printf "%.1f\n", v; else if (v >= 1) printf "%.2f\n", v; else printf "%.3f\n", v}'; }
# best KIND KEY...: the better of several reference figures (max for
# bandwidth, min for latency) and its mode.
best() {
	local kind=$1 k r v m bv=- bm=-
	shift
	for k in "$@"; do
		read -r v m <<<"$(stat "$k")"
		[[ $v == - ]] && continue
		if [[ $bv == - ]] || awk -v a="$v" -v b="$bv" -v kind="$kind" 'BEGIN{exit !(kind == "max" ? a > b : a < b)}'; then
			bv=$v bm=$m
		fi
	done
	echo "$bv $bm"
}
retx() { # retx KEY: retransmission counters summed over the repetitions
	local r s p
	r=$(total "${1}_retries") s=$(total "${1}_seqerr") p=$(total "${1}_pkts")
	[[ $r == - ]] && { echo "-"; return; }
	echo "$r retries, $s out-of-seq/dup of $p pkts"
}

met=0 targets=0
rows=()
# row NAME GV_VALUE GV_MODE REF_NAME REF_VALUE REF_MODE OP FACTOR RETX: one
# line of the table; OP is ge (goverbs ≥ FACTOR × reference), le
# (goverbs ≤ FACTOR × reference), lt (goverbs < reference), abs (goverbs ≤
# FACTOR, no reference) or info (no target). The ratio is goverbs /
# reference.
row() {
	local name=$1 g=$2 gm=$3 rname=$4 r=$5 rm=$6 op=$7 f=$8 rx=${9:--} ratio=n/a target verdict
	case $op in
	ge) target="≥ $f×" ;;
	le) target="≤ $f×" ;;
	lt) target="< 1×" ;;
	abs) target="≤ $f" ;;
	*) target="info" ;;
	esac
	if [[ $op == abs ]]; then
		ratio=- r=$f
	elif [[ $g != - && $r != - ]]; then
		ratio=$(awk -v a="$g" -v b="$r" 'BEGIN{if (b > 0) printf "%.2f", a / b; else print "n/a"}')
	fi
	if [[ $op == info ]]; then
		verdict=-
	elif [[ $g == - || $r == - ]]; then
		verdict="n/a"
		targets=$((targets + 1))
	else
		targets=$((targets + 1))
		if awk -v g="$g" -v r="$r" -v f="$f" -v op="$op" 'BEGIN{exit !(op == "ge" ? g >= f * r : op == "le" ? g <= f * r : op == "abs" ? g <= f : g < r)}'; then
			verdict=met met=$((met + 1))
		else
			verdict=missed
		fi
		[[ $op != abs && $gm != "$rm" ]] && verdict="$verdict (modes differ)"
	fi
	rows+=("| $name | $(fmt "$g") | $gm | $rname | $(fmt "$r") | $rm | $ratio | $target | $verdict | $rx |")
}

read -r w64 w64m <<<"$(stat gv_write_64k)"
read -r w4 w4m <<<"$(stat gv_write_4k)"
read -r r8 r8m <<<"$(stat gv_write_8_rate)"
read -r l8 l8m <<<"$(stat gv_write_lat_8)"
read -r s2 s2m <<<"$(stat gv_send_lat_2)"
read -r cpu64 cpu64m <<<"$(stat gv_write_64k_cpu)"
read -r q4 q4m <<<"$(stat gv_write_64k_q4)"
read -r p4 p4m <<<"$(stat gv_write_64k_4pairs)"
read -r gso gsom <<<"$(stat go_udp_tput_gsobatch_gro_4096B)"
read -r mm4 mm4m <<<"$(stat go_udp_tput_batch_batch_4096B)"
read -r mm8 mm8m <<<"$(stat go_udp_tput_batch_batch_8B_rate)"
read -r bp bpm <<<"$(stat go_udp_lo_poll_8B_oneway)"
read -r krc krcm <<<"$(stat kernel_rc_pair_oneway)"
read -r kone konem <<<"$(stat kernel_one_oneway)"
read -r ucxbw ucxbwm <<<"$(best max ucx_tcp_am_bw_64k ucx_tcp_put_bw_64k)"
read -r ucxlat ucxlatm <<<"$(best min ucx_tcp_am_lat_8 ucx_tcp_put_lat_8)"
read -r ucxr8 ucxr8m <<<"$(stat ucx_tcp_am_bw_8_rate)"
read -r fi8 fi8m <<<"$(stat fi_tcp_msg_8_lat)"
read -r fi4 fi4m <<<"$(stat fi_tcp_msg_4096_ppbw)"
read -r fi64 fi64m <<<"$(stat fi_tcp_msg_65536_ppbw)"

row "ib_write_bw 64 KiB (GB/s)" "$w64" "$w64m" "raw Go GSO+GRO 4 KiB segs" "$gso" "$gsom" ge 0.5 "$(retx gv_write_64k)"
row "ib_write_bw 64 KiB (GB/s)" "$w64" "$w64m" "UCX tcp 64 KiB (best of am/put bw)" "$ucxbw" "$ucxbwm" ge 1.2 "$(retx gv_write_64k)"
row "ib_write_bw 4 KiB (GB/s)" "$w4" "$w4m" "raw Go sendmmsg 4 KiB" "$mm4" "$mm4m" ge 1.5 "$(retx gv_write_4k)"
row "ib_write_bw 8 B (M msg/s)" "$r8" "$r8m" "raw Go sendmmsg 8 B datagrams" "$mm8" "$mm8m" ge 3 "$(retx gv_write_8)"
row "ib_write_lat 8 B typical (µs one-way)" "$l8" "$l8m" "raw Go UDP busy-poll one-way" "$bp" "$bpm" le 1.5
row "ib_write_lat 8 B typical (µs one-way)" "$l8" "$l8m" "UCX tcp 8 B (best of am/put lat, p50)" "$ucxlat" "$ucxlatm" lt 1
row "CPU-s per GB, ib_write_bw 64 KiB, both processes" "$cpu64" "$cpu64m" "absolute target" - - abs 0.5
row "ib_write_lat 8 B typical (µs one-way)" "$l8" "$l8m" "kernel alone, RC request + ACK per message" "$krc" "$krcm" info 1
row "kernel alone, RC request + ACK per message (µs one-way)" "$krc" "$krcm" "kernel alone, one datagram" "$kone" "$konem" info 1
row "kernel alone, one datagram (µs one-way)" "$kone" "$konem" "raw Go UDP busy-poll one-way" "$bp" "$bpm" info 1
row "ib_send_lat 2 B typical (µs one-way)" "$s2" "$s2m" "raw Go UDP busy-poll one-way" "$bp" "$bpm" info 1
row "ib_write_bw 64 KiB -q 4 (GB/s)" "$q4" "$q4m" "one QP" "$w64" "$w64m" info 1 "$(retx gv_write_64k_q4)"
row "4 concurrent ib_write_bw 64 KiB pairs, total (GB/s)" "$p4" "$p4m" "one pair" "$w64" "$w64m" info 1 "$(retx gv_write_64k_4pairs)"
row "ib_write_bw 8 B (M msg/s)" "$r8" "$r8m" "UCX tcp am_bw 8 B" "$ucxr8" "$ucxr8m" info 1
row "ib_write_lat 8 B typical (µs one-way)" "$l8" "$l8m" "libfabric tcp msg 8 B (fi_pingpong mean)" "$fi8" "$fi8m" info 1
row "ib_write_bw 4 KiB (GB/s)" "$w4" "$w4m" "libfabric tcp msg 4 KiB (ping-pong bw)" "$fi4" "$fi4m" info 1
row "ib_write_bw 64 KiB (GB/s)" "$w64" "$w64m" "libfabric tcp msg 64 KiB (ping-pong bw)" "$fi64" "$fi64m" info 1

echo
echo "== machine"
machine_facts
echo "peers:   ucx $(ucx_info -v 2>/dev/null | awk '/Version/{print $3}' | grep . || echo n/a) / libfabric $(fi_info --version 2>/dev/null | awk '/^libfabric:/{print $2}' | grep . || echo n/a) / goverbs $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "== goverbs vs references: medians of $REPS repetition(s)$([[ -n $QUICK ]] && echo ', QUICK'); mode = vCPU mode (near/far) of the probes before the figures; raw rows: $RAW"
echo
echo "| figure | goverbs | mode | reference | value | mode | ratio | target | verdict | retransmissions (goverbs, summed) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
echo
if ! grep -q '^[0-9]* gv_' "$RAW"; then
	echo "bench.sh: goverbs could not be measured (see the log above)" >&2
	exit 1
fi
echo "$met of $targets targets met"
exit 0
