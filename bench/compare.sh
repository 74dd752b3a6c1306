#!/usr/bin/env bash
# bench/compare.sh (make bench-compare): the runner over HTTP against
# cloudwego/eino in process, in one run (issue 21).
#
# It builds the local runner, starts it on a loopback port, and times with
# curl (-w '%{time_total}') a chain of 1,000 set nodes, a fan-out of 1,000
# and a chain of 10,000 (the shapes of functions/bench_e2e_test.go; the
# body is the same text every time, so the runner's compile caches are
# warm, as eino's compiled graphs are); bench/eino (a module of its own)
# on the same shapes; and BenchmarkInProcess (functions/), the engine alone
# on the same documents. It goes in rounds, each timing every figure once,
# so that load from elsewhere falls on all of them alike; it prints the
# medians over RUNS rounds after WARM untimed ones, and ratios, each the
# median of the rounds' own ratios (the two figures of a round taken
# seconds apart, on a machine whose speed drifts by ±20% over minutes):
#   eino / runner    how many times faster the runner over HTTP is than eino
#   10k / 1k         the chain's growth (linear: 10)
#   HTTP / engine    curl's time over BenchmarkInProcess's (per node alike)
#   floor            bench/floor, a server that computes nothing and sends
#                    the runner's own recorded stream of the shape, timed in
#                    the same rounds: what loopback and curl cost alone
#   engine+floor     (engine + floor) / engine: the HTTP / engine of a
#                    server that ran the engine, then sent its stream
#   upload           bench/floor answering the shape's body with the short
#                    stream of a one-node workflow (four lines): the
#                    request's fixed cost and the body's upload, which
#                    come before any server can start the engine
#   bound            (engine + upload) / engine: the least HTTP/engine of
#                    any server on this machine, one whose stream cost
#                    nothing and overlapped the engine whole
#   HTTP / evicted   curl's time over BenchmarkInProcess's evicted variant:
#                    the engine on the same text with the CPU's caches
#                    emptied before each run, as a request over HTTP meets
#                    them (bench/BASELINE.md, Round 15)
#
# Last, the issue's targets (TARGET_EINO, TARGET_GROWTH, TARGET_HTTP), each
# with this run's figure and "met" or "not met"; an HTTP / engine target
# below its shape's bound is also said to be out of reach here.
#
# Each shape is sent twice in a row, and the second is the one timed: the
# engine's figure is likewise the third and fourth run of its document in
# its process (BenchmarkInProcess runs it twice untimed first), and eino's
# a graph invoked once untimed before (-warm 1), so all three meet warm
# caches. The first of each pair, a request meeting a runner whose caches
# the other figures' processes have just used, is printed too ("first of
# two"): on this machine it costs up to 1-2 ms more, in the engine as
# much as in the HTTP path (bench/BASELINE.md, Round 7).
#
# CONN=keep (the default) sends each round's requests to a server over one
# kept-alive connection, opened by an untimed GET /v1/capabilities, as a
# workflow server keeps its connection to a runner; CONN=new starts a curl
# per request, so each request's time includes a new connection (its
# TCP handshake, the server's new connection, curl's own start).
#
# BASE=<revision> also builds that revision's runner and times it in the
# same loop, turn about with this tree's (a before/after column).
# curl writes each stream it receives into memory (a directory on tmpfs,
# /dev/shm), where completed reads its last line, not onto the disk: a
# workflow server parses the stream as it comes, and writing a stream of
# 350 KB into a file on this machine's ext4 /tmp took curl ≈1.1 ms more
# than tmpfs did, a client's cost that was counted as the runner's
# (bench/BASELINE.md, Round 9). OUTDIR names another directory.
# RUNS (15), WARM (3); EINO_MODES: which eino trigger modes to time, any
# (its default, Pregel supersteps) and all (AllPredecessor, its DAG mode).
set -euo pipefail
RUNS=${RUNS:-15}
WARM=${WARM:-3}
EINO_MODES=${EINO_MODES:-any all}
CONN=${CONN:-keep}
TARGET_EINO=12 TARGET_GROWTH=10 TARGET_HTTP=1.3
case $CONN in keep | new) ;; *) echo "compare: CONN: want keep or new, not $CONN" >&2; exit 2 ;; esac
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
if [ -n "${OUTDIR:-}" ]; then
	out=$(mktemp -d -p "$OUTDIR")
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then
	out=$(mktemp -d -p /dev/shm)
else
	out=$tmp
fi
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp" "$out"
	[ -z "${BASE:-}" ] || git -C "$root" worktree prune
}
trap cleanup EXIT

echo "load: $(uptime | sed 's/.*load average/load average/'); streams received into $(df --output=fstype "$out" 2>/dev/null | tail -1) ($out)"
cd "$root"
CGO_ENABLED=0 $GO build -trimpath -o "$tmp/runner" ./functions/runner
# The code node's worker, a binary of its own beside the runner's.
if [ -d functions/codeworker ]; then
	CGO_ENABLED=0 $GO build -trimpath -o "$tmp/codeworker" ./functions/codeworker
	export RUNNER_CODE_WORKER="$tmp/codeworker"
fi
(cd bench/eino && $GO build -trimpath -o "$tmp/eino" .)
CGO_ENABLED=0 $GO build -trimpath -o "$tmp/floor" ./bench/floor

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
# One node: its stream (recorded below) is what the floor answers to time
# a shape's upload.
chain 1 >"$tmp/tiny.json"
fanout 1000 >"$tmp/fanout1000.json"
chain 10000 >"$tmp/chain10000.json"

token="bench_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
# serve NAME BIN: starts the runner BIN on a free loopback port, its
# address in url[NAME].
declare -A url
pids=()
serve() {
	RUNNER_TOKENS=$token RUNNER_ADDR=127.0.0.1:0 "$2" >"$tmp/$1.log" 2>&1 &
	pids+=($!)
	listening "$1"
}
# listening NAME: waits for the server just started to print its address
# into $tmp/NAME.log, and puts it in url[NAME].
listening() {
	for _ in $(seq 100); do
		url[$1]=$(grep -so 'http://127\.0\.0\.1:[0-9]*' "$tmp/$1.log" | head -1 || true)
		[ -n "${url[$1]}" ] && return
		sleep 0.1
	done
	echo "compare: the server $1 did not start:" >&2; cat "$tmp/$1.log" >&2; exit 1
}
serve head "$tmp/runner"
servers=head
if [ -n "${BASE:-}" ]; then
	# The runner of BASE too, timed in the same loop.
	git -C "$root" worktree add -q --detach "$tmp/base" "$BASE"
	(cd "$tmp/base" && CGO_ENABLED=0 $GO build -trimpath -o "$tmp/runner-base" ./functions/runner)
	git -C "$root" worktree remove --force "$tmp/base"
	serve base "$tmp/runner-base"
	servers="base head"
fi

# completed SERVER SHAPE FILE: the stream in FILE ended completed.
completed() {
	tail -n1 "$3" | grep -q '"status":"completed"' ||
		{ echo "compare: $2 did not complete on $1: $(tail -c 300 "$3")" >&2; exit 1; }
}

# The floor: bench/floor, a server that only carries bytes, answering each
# shape with the stream the runner just sent for it (recorded here, once),
# timed in the same rounds over the same kind of connection. No server
# doing the runner's work can answer faster; engine + floor is what a
# server that did its work and then sent its stream, one after the other,
# would take.
mkdir -p "$tmp/streams"
for s in tiny chain1000 fanout1000 chain10000; do
	curl -sS -o "$tmp/streams/$s.ndjson" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		--data-binary @"$tmp/$s.json" "${url[head]}/v1/executions"
	completed head "$s" "$tmp/streams/$s.ndjson"
done
"$tmp/floor" -dir "$tmp/streams" -addr 127.0.0.1:0 >"$tmp/floor.log" 2>&1 &
pids+=($!)
listening floor
servers="$servers floor"

# keepalive SERVER: one curl, one connection: an untimed GET of the
# capabilities opens it, then every shape twice, back to back; prints
# "idle/shape seconds" for the first of each pair and "shape seconds" for
# the second (see "Each shape twice" above). The floor then answers each
# shape's body twice more with the one-node stream: "up/shape seconds"
# for the second.
# curl's exit status is checked: a transfer that fails prints nothing.
keepalive() {
	{
		printf 'url = "%s/v1/capabilities"\nheader = "Authorization: Bearer %s"\noutput = "/dev/null"\n' "${url[$1]}" "$token"
		keys=
		for s in chain1000 fanout1000 chain10000; do keys="$keys idle/$s $s"; done
		if [ "$1" = floor ]; then
			for s in chain1000 fanout1000 chain10000; do keys="$keys idleup/$s up/$s"; done
		fi
		for k in $keys; do
			s=${k#*/}
			q=
			if [ "$1" = floor ]; then
				case $k in *up/*) q="?shape=tiny" ;; *) q="?shape=$s" ;; esac
			fi
			printf 'next\nurl = "%s/v1/executions%s"\nheader = "Authorization: Bearer %s"\n' "${url[$1]}" "$q" "$token"
			printf 'header = "Content-Type: application/json"\ndata-binary = "@%s"\noutput = "%s"\n' "$tmp/$s.json" "$out/out.${k/\//.}"
			printf 'write-out = "%s %%{time_total} %%{num_connects}\\n"\n' "$k"
		done
	} >"$tmp/curl.cfg"
	curl -sS -K "$tmp/curl.cfg" >"$tmp/keep.out"
	# num_connects 0: the request went over the connection already open.
	awk '$3 != 0 { print "compare: a request opened a connection of its own" > "/dev/stderr"; exit 1 } { print $1, $2 }' "$tmp/keep.out"
}

# timed SERVER SHAPE QUERY: one request of SHAPE's body to SERVER over a
# new connection (CONN=new); prints its milliseconds once the stream it
# received is checked.
timed() {
	local t
	t=$(curl -sS -o "$out/out" -w '%{time_total}' -H "Authorization: Bearer $token" \
		-H 'Content-Type: application/json' --data-binary @"$tmp/$2.json" "${url[$1]}/v1/executions$3")
	completed "$1" "$2$3" "$out/out"
	calc "$t * 1000"
}

# calc EXPR: awk's arithmetic
calc() { awk "BEGIN { print $1 }"; }

# median of the numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# The engine alone, in process, on the same documents: BenchmarkInProcess's
# warm variants (the same text every iteration).
$GO test -c -o "$tmp/functions.test" ./functions/

# Rounds: in each, every shape once through each server (curl), then eino
# and the engine in process once each, so that all the figures of a row
# share the machine's moments; the first WARM rounds are not counted.
# Each line of samples is "key ms".
for i in $(seq $((WARM + RUNS))); do
	# Turn about: the server timed first in a round meets the machine as
	# the in-process figures left it, the second one a machine just busy
	# with the first; with BASE, each goes first every other round.
	order=$servers
	[ $((i % 2)) = 0 ] && order=$(echo "$servers" | awk '{ for (k = NF; k > 0; k--) printf "%s%s", $k, (k > 1 ? " " : "") }')
	if [ "$CONN" = keep ]; then
		for sv in $order; do
			keepalive "$sv" | while read -r s t; do
				case $s in
				idle/*) echo "$i idle/$sv/${s#idle/} $(calc "$t * 1000")" ;;
				idleup/*) ;;
				up/*) echo "$i upload/${s#up/} $(calc "$t * 1000")" ;;
				*) echo "$i http/$sv/$s $(calc "$t * 1000")" ;;
				esac
			done
			for s in chain1000 fanout1000 chain10000; do
				completed "$sv" "$s" "$out/out.idle.$s"
				completed "$sv" "$s" "$out/out.$s"
				if [ "$sv" = floor ]; then completed "$sv" "upload of $s" "$out/out.up.$s"; fi
			done
		done
	else
		for s in chain1000 fanout1000 chain10000; do
			for sv in $order; do
				q=
				[ "$sv" = floor ] && q="?shape=$s"
				# An assignment, so that a stream that did not complete
				# stops the run (set -e) rather than print no figure.
				for k in idle http; do
					ms=$(timed "$sv" "$s" "$q")
					echo "$i $k/$sv/$s $ms"
				done
				if [ "$sv" = floor ]; then
					# The shape's upload, twice too: the second timed.
					# The first is discarded, not assigned; a stream
					# that did not complete still stops the run, as
					# completed exits non-zero inside timed.
					timed floor "$s" "?shape=tiny" >/dev/null
					ms=$(timed floor "$s" "?shape=tiny")
					echo "$i upload/$s $ms"
				fi
			done
		done
	fi
	for m in $EINO_MODES; do
		"$tmp/eino" -mode "$m" -runs 1 -warm 1 -shapes chain:1000,fanout:1000 |
			while read -r kind n ms; do echo "$i eino/$m/$kind$n $ms"; done
	done
	(cd functions && "$tmp/functions.test" -test.run '^$' -test.bench 'InProcess/^(chain1000|fanout1000|chain10000)$/(warm|evicted)$' -test.benchtime 2x) |
		awk -v i="$i" '/^BenchmarkInProcess/ { split($1, p, "/"); n = (p[2] == "chain10000") ? 10000 : 1000
			key = (p[3] ~ /^evicted/ ? "evicted/" : "engine/") p[2]
			for (k = 1; k < NF; k++) if ($(k+1) == "ns/node") print i, key, $k * n / 1e6 }'
done | awk -v warm="$WARM" '$1 > warm' >"$tmp/samples"
for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
pids=()

# med KEY: the median of KEY's samples ("" when there are none).
med() { awk -v k="$1" '$2 == k { print $3 }' "$tmp/samples" | median; }
# ratio A B [C]: the median over the rounds of A's sample over B's; with C,
# of (A + C) over B.
ratio() {
	awk -v a="$1" -v b="$2" -v c="${3:-}" '$2 == a { x[$1] = $3 } $2 == b { y[$1] = $3 } $2 == c { z[$1] = $3 }
		END { for (i in x) if ((i in y) && y[i] > 0 && (c == "" || (i in z))) print (x[i] + z[i]) / y[i] }' "$tmp/samples" | median
}
declare -A http httpbase idle eino inproc evicted floor upload
# The ratios the table and the targets both print, computed once.
declare -A einoratio httpratio bound
for s in chain1000 fanout1000 chain10000; do
	http[$s]=$(med "http/head/$s")
	floor[$s]=$(med "http/floor/$s")
	upload[$s]=$(med "upload/$s")
	idle[$s]=$(med "idle/head/$s")
	[ -n "${BASE:-}" ] && httpbase[$s]=$(med "http/base/$s")
	inproc[$s]=$(med "engine/$s")
	evicted[$s]=$(med "evicted/$s")
	for m in $EINO_MODES; do
		eino[$m/$s]=$(med "eino/$m/$s")
		[ -n "${eino[$m/$s]}" ] && einoratio[$m/$s]=$(ratio "eino/$m/$s" "http/head/$s")
	done
	if [ -n "${inproc[$s]}" ]; then
		httpratio[$s]=$(ratio "http/head/$s" "engine/$s")
		bound[$s]=$(ratio "engine/$s" "engine/$s" "upload/$s")
	fi
done
growth=$(ratio http/head/chain10000 http/head/chain1000)

printf '\n%-12s' shape
[ -n "${BASE:-}" ] && printf ' %12s' "$BASE ms"
printf ' %12s' 'runner ms'
for m in $EINO_MODES; do printf ' %14s %12s' "eino[$m] ms" "eino/runner"; done
printf ' %14s %14s %12s %9s %14s %10s %8s %12s\n' 'HTTP µs/node' 'engine µs/node' 'HTTP/engine' 'floor ms' 'engine+floor' 'upload ms' 'bound' 'HTTP/evicted'
for s in chain1000 fanout1000 chain10000; do
	n=${s#chain}; n=${n#fanout}
	printf '%-12s' "$s"
	[ -n "${BASE:-}" ] && printf ' %12.2f' "${httpbase[$s]}"
	printf ' %12.2f' "${http[$s]}"
	for m in $EINO_MODES; do
		if [ -n "${eino[$m/$s]:-}" ]; then
			printf ' %14.2f %11.1fx' "${eino[$m/$s]}" "${einoratio[$m/$s]}"
		else
			printf ' %14s %12s' - -
		fi
	done
	hn=$(calc "${http[$s]} * 1000 / $n")
	if [ -n "${inproc[$s]:-}" ]; then
		en=$(calc "${inproc[$s]} * 1000 / $n")
		printf ' %14.2f %14.2f %11.2fx %9.2f %13.2fx %10.2f %7.2fx %11.2fx\n' "$hn" "$en" "${httpratio[$s]}" \
			"${floor[$s]}" "$(ratio "engine/$s" "engine/$s" "http/floor/$s")" \
			"${upload[$s]}" "${bound[$s]}" "$(ratio "http/head/$s" "evicted/$s")"
	else
		printf ' %14.2f %14s %12s\n' "$hn" - -
	fi
done
printf 'chain 10k / 1k over HTTP: %.1fx (linear: 10x)\n' "$growth"
echo "(floor: bench/floor carrying the runner's own stream of the shape, and nothing else; engine+floor: (engine + floor) / engine, the HTTP/engine of a server that ran the engine and then sent its stream; upload: bench/floor taking the shape's body and answering with a one-node stream, the request's cost before any engine can start; bound: (engine + upload) / engine, the least HTTP/engine of any server here; HTTP/evicted: over the engine with the CPU's caches emptied before each run, as a request meets them)"
# The first of each pair: the same figures for a request that meets the
# runner after the machine's other work, with no request just before it.
printf '\n%-12s %12s' 'first of two' 'runner ms'
for m in $EINO_MODES; do printf ' %12s' "eino[$m]/it"; done
printf ' %14s %12s\n' 'HTTP µs/node' 'HTTP/engine'
for s in chain1000 fanout1000 chain10000; do
	n=${s#chain}; n=${n#fanout}
	printf '%-12s %12.2f' "$s" "${idle[$s]}"
	for m in $EINO_MODES; do
		if [ -n "${eino[$m/$s]:-}" ]; then printf ' %11.1fx' "$(ratio "eino/$m/$s" "idle/head/$s")"; else printf ' %12s' -; fi
	done
	hn=$(calc "${idle[$s]} * 1000 / $n")
	if [ -n "${inproc[$s]:-}" ]; then
		printf ' %14.2f %11.2fx\n' "$hn" "$(ratio "idle/head/$s" "engine/$s")"
	else
		printf ' %14.2f %12s\n' "$hn" -
	fi
done
echo "(medians of $RUNS rounds after $WARM warm-up rounds, each round every figure once, ratios the medians of the rounds' own; CONN=$CONN: $([ "$CONN" = keep ] && echo "one kept-alive connection per round and server" || echo "a new connection, and a curl, per request"); eino's chain of 10,000 is left out: it grows quadratically, about 17 s a run)"

# The targets, from the figures above.
# holds X OP T: whether X OP T (OP: ge or le); verdict X OP T says it.
holds() { awk -v x="$1" -v t="$3" -v op="$2" 'BEGIN { exit !((op == "ge") ? x >= t : x <= t) }'; }
verdict() { if holds "$@"; then echo met; else echo "not met"; fi; }
echo
echo "targets (issue 21):"
for m in $EINO_MODES; do
	line=
	for s in chain1000 fanout1000; do
		r=${einoratio[$m/$s]:-}
		[ -n "$r" ] && line="$line; $s $(printf '%.1fx' "$r") $(verdict "$r" ge "$TARGET_EINO")"
	done
	[ -z "$line" ] || echo "  eino[$m] / runner >= ${TARGET_EINO}x:${line#;}"
done
echo "  chain 10k / 1k <= ${TARGET_GROWTH}x: $(printf '%.1fx' "$growth") $(verdict "$growth" le "$TARGET_GROWTH")"
line=
for s in chain1000 fanout1000 chain10000; do
	r=${httpratio[$s]:-}
	[ -n "$r" ] || continue
	b=$(printf '%.2fx' "${bound[$s]}")
	if holds "${bound[$s]}" le "$TARGET_HTTP"; then b=" (bound $b)"; else b=", out of reach here: bound $b"; fi
	line="$line; $s $(printf '%.2fx' "$r") $(verdict "$r" le "$TARGET_HTTP")$b"
done
echo "  HTTP / engine <= ${TARGET_HTTP}x:${line#;}"
