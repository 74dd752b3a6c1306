#!/usr/bin/env bash
# bench/compare.sh (make bench-compare): the runner over HTTP against
# cloudwego/eino in process, in one run (issue 21).
#
# It builds the local runner, starts it on a loopback port, and times with
# curl (-w '%{time_total}') the same request RUNS times after WARM untimed
# ones, for a chain of 1,000 set nodes, a fan-out of 1,000 and a chain of
# 10,000 (the shapes of functions/bench_e2e_test.go; the body is the same
# text every time, so the runner's compile caches are warm, as eino's
# compiled graphs are). Then it runs bench/eino (a module of its own) on
# the same shapes, and BenchmarkInProcess (functions/) for the engine
# alone on the same documents, and prints medians and ratios:
#   eino / runner    how many times faster the runner over HTTP is than eino
#   10k / 1k         the chain's growth (linear: 10)
#   HTTP / engine    per node, curl's time over BenchmarkInProcess's
#
# RUNS (15), WARM (3); EINO_MODES: which eino trigger modes to time, any
# (its default, Pregel supersteps) and all (AllPredecessor, its DAG mode).
set -euo pipefail
RUNS=${RUNS:-15}
WARM=${WARM:-3}
EINO_MODES=${EINO_MODES:-any all}
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "load: $(uptime | sed 's/.*load average/load average/')"
cd "$root"
CGO_ENABLED=0 $GO build -trimpath -o "$tmp/runner" ./functions/runner
(cd bench/eino && $GO build -trimpath -o "$tmp/eino" .)

# The request bodies: the text functions/bench_e2e_test.go's e2eChain and
# e2eFanout write for salt 0, trace off.
chain() {
	awk -v n="$1" 'BEGIN {
		printf "{\"version\":1,\"workflow\":{\"nodes\":[{\"id\":\"n0\",\"type\":\"set\",\"with\":{\"value\":0}}"
		for (i = 1; i < n; i++) printf ",{\"id\":\"n%d\",\"type\":\"set\",\"needs\":[\"n%d\"],\"with\":{\"value\":\"${{ nodes.n%d.output + 1 /* 0 */ }}\"}}", i, i-1, i-1
		printf "],\"output\":\"${{ nodes.n%d.output /* 0 */ }}\"}}", n-1
	}'
}
fanout() {
	awk -v n="$1" 'BEGIN {
		printf "{\"version\":1,\"workflow\":{\"nodes\":[{\"id\":\"root\",\"type\":\"set\",\"with\":{\"value\":{\"k\":\"v\"}}}"
		for (i = 1; i < n-1; i++) printf ",{\"id\":\"n%d\",\"type\":\"set\",\"needs\":[\"root\"],\"with\":{\"value\":\"${{ nodes.root.output.k /* 0 */ }}\"}}", i
		printf ",{\"id\":\"merge\",\"type\":\"set\",\"needs\":["
		for (i = 1; i < n-1; i++) printf "%s\"n%d\"", (i > 1 ? "," : ""), i
		printf "],\"with\":{\"value\":\"${{ len(nodes) /* 0 */ }}\"}}],\"output\":\"${{ nodes.merge.output }}\"}}"
	}'
}
chain 1000 >"$tmp/chain1000.json"
fanout 1000 >"$tmp/fanout1000.json"
chain 10000 >"$tmp/chain10000.json"

token="bench_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
RUNNER_TOKENS=$token RUNNER_ADDR=127.0.0.1:0 "$tmp/runner" >"$tmp/runner.log" 2>&1 &
pid=$!
base=
for _ in $(seq 100); do
	base=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/runner.log" | head -1 || true)
	[ -n "$base" ] && break
	sleep 0.1
done
[ -n "$base" ] || { echo "compare: the runner did not start:" >&2; cat "$tmp/runner.log" >&2; exit 1; }

# calc EXPR: awk's arithmetic
calc() { awk "BEGIN { print $1 }"; }

# median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# curlms FILE: the median of RUNS curl-timed executions, in ms; each
# stream must end with a completed result.
curlms() {
	for i in $(seq $((WARM + RUNS))); do
		t=$(curl -sS -o "$tmp/out" -w '%{time_total}' -H "Authorization: Bearer $token" \
			-H 'Content-Type: application/json' --data-binary @"$1" "$base/v1/executions")
		tail -n1 "$tmp/out" | grep -q '"status":"completed"' ||
			{ echo "compare: $1 did not complete: $(tail -c 300 "$tmp/out")" >&2; exit 1; }
		[ "$i" -gt "$WARM" ] && echo "$t"
	done | awk '{ print $1 * 1000 }' | median
}

declare -A http
for s in chain1000 fanout1000 chain10000; do
	http[$s]=$(curlms "$tmp/$s.json")
done
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

declare -A eino
for m in $EINO_MODES; do
	while read -r kind n ms; do eino[$m/$kind$n]=$ms; done < <("$tmp/eino" -mode "$m" -runs "$RUNS" -warm "$WARM" -shapes chain:1000,fanout:1000)
done

# The engine alone on the same documents: ns/node of BenchmarkInProcess's
# warm variant (the same text every iteration).
declare -A inproc
while read -r name ns; do inproc[$name]=$ns; done < <(
	$GO test -run '^$' -bench 'InProcess/.*/warm' -benchtime "${RUNS}x" -count 1 ./functions/ |
		awk '/^BenchmarkInProcess/ { split($1, p, "/"); for (i = 1; i < NF; i++) if ($(i+1) == "ns/node") print p[2], $i }')

printf '\n%-12s %12s' shape 'runner ms'
for m in $EINO_MODES; do printf ' %14s %12s' "eino[$m] ms" "eino/runner"; done
printf ' %14s %14s %12s\n' 'HTTP µs/node' 'engine µs/node' 'HTTP/engine'
for s in chain1000 fanout1000 chain10000; do
	n=${s#chain}; n=${n#fanout}
	printf '%-12s %12.2f' "$s" "${http[$s]}"
	for m in $EINO_MODES; do
		if [ -n "${eino[$m/$s]:-}" ]; then
			printf ' %14.2f %11.1fx' "${eino[$m/$s]}" "$(calc "${eino[$m/$s]} / ${http[$s]}")"
		else
			printf ' %14s %12s' - -
		fi
	done
	hn=$(calc "${http[$s]} * 1000 / $n")
	if [ -n "${inproc[$s]:-}" ]; then
		en=$(calc "${inproc[$s]} / 1000")
		printf ' %14.2f %14.2f %11.2fx\n' "$hn" "$en" "$(calc "$hn / $en")"
	else
		printf ' %14.2f %14s %12s\n' "$hn" - -
	fi
done
printf 'chain 10k / 1k over HTTP: %.1fx (linear: 10x)\n' "$(calc "${http[chain10000]} / ${http[chain1000]}")"
echo "(medians of $RUNS runs after $WARM warm-up; eino's chain of 10,000 is left out: it grows quadratically, about 17 s a run)"
