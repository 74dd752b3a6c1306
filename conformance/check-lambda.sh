#!/usr/bin/env bash
# make check-lambda: the conformance suite (runnerctl check) against the
# Lambda build, offline. The bootstrap, built as deployed but for this
# machine, runs under the Lambda runtime interface emulator (aws-lambda-rie)
# with a static token; `runnerctl bridge` serves it as its function URL
# would (function URL events, streamed answers). Exits 0 only when the suite
# ran and no check failed. docs/deploy.md, "Under the Lambda runtime
# interface emulator".
#
# BOOTSTRAP, WORKER and RUNNERCTL name the binaries (make passes them);
# CHECK_LAMBDA_TIMEOUT bounds each check (default 30s).
set -euo pipefail

BOOTSTRAP=${BOOTSTRAP:-bin/bootstrap-local}
WORKER=${WORKER:-bin/codeworker-local}
RUNNERCTL=${RUNNERCTL:-bin/runnerctl}
for f in "$BOOTSTRAP" "$WORKER" "$RUNNERCTL"; do
	[ -x "$f" ] || { echo "check-lambda: $f is missing: make check-lambda builds it" >&2; exit 1; }
done
RIE=$(command -v aws-lambda-rie || echo "$(go env GOPATH)/bin/aws-lambda-rie")
[ -x "$RIE" ] || { echo "check-lambda: aws-lambda-rie not found on PATH or in GOPATH/bin: make tools installs it" >&2; exit 1; }

# Three free loopback ports: the emulator's invoke API, the runtime API it
# gives the bootstrap, and the bridge. A port is free when nothing accepts
# a connection on it.
free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [[ " ${taken:-} " != *" $p "* ]]; then
			echo "$p"
			return
		fi
	done
	echo "check-lambda: no free port found" >&2
	exit 1
}
taken=""
invoke_port=$(free_port); taken="$taken $invoke_port"
api_port=$(free_port); taken="$taken $api_port"
bridge_port=$(free_port)

wait_port() { # port name pid
	for _ in $(seq 1 200); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		kill -0 "$3" 2>/dev/null || { echo "check-lambda: $2 exited before listening on 127.0.0.1:$1" >&2; return 1; }
		sleep 0.05
	done
	echo "check-lambda: $2 does not listen on 127.0.0.1:$1 after 10 s" >&2
	return 1
}

log=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$log"
}
trap cleanup EXIT

# A fresh token for this run only: the bootstrap reads it from
# RUNNER_TOKENS, runnerctl from RUNNER_TOKEN; neither prints it.
token="check_$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"

# The emulator passes its environment to the bootstrap: a hermetic one, as
# Lambda's (no AWS configuration, no instance metadata), with the function
# settings capabilities report.
env -i PATH="$PATH" HOME="$log" \
	AWS_REGION=eu-west-1 AWS_EC2_METADATA_DISABLED=true \
	AWS_CONFIG_FILE="$log/none" AWS_SHARED_CREDENTIALS_FILE="$log/none" \
	AWS_LAMBDA_FUNCTION_NAME=runner AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512 AWS_LAMBDA_FUNCTION_TIMEOUT=60 \
	RUNNER_TIMEOUT_SECONDS=60 RUNNER_TOKENS="$token" RUNNER_CODE_WORKER="$(realpath "$WORKER")" \
	LOG_LEVEL=warn RUNNER_LOG_LEVEL=warn \
	"$RIE" --runtime-interface-emulator-address "127.0.0.1:$invoke_port" \
	--runtime-api-address "127.0.0.1:$api_port" "$(realpath "$BOOTSTRAP")" >"$log/rie.out" 2>&1 &
pids+=($!)
wait_port "$invoke_port" aws-lambda-rie "$!" || { cat "$log/rie.out" >&2; exit 1; }

"$RUNNERCTL" bridge --listen "127.0.0.1:$bridge_port" \
	--invoke "http://127.0.0.1:$invoke_port/2015-03-31/functions/function/invocations" 2>"$log/bridge.out" &
pids+=($!)
wait_port "$bridge_port" "runnerctl bridge" "$!" || { cat "$log/bridge.out" >&2; exit 1; }

echo "check-lambda: $(realpath "$BOOTSTRAP") under aws-lambda-rie (127.0.0.1:$invoke_port), through runnerctl bridge (127.0.0.1:$bridge_port)"
status=0
RUNNER_TOKEN="$token" "$RUNNERCTL" check --url "http://127.0.0.1:$bridge_port" --timeout "${CHECK_LAMBDA_TIMEOUT:-30s}" || status=$?
if [ "$status" != 0 ]; then
	echo "check-lambda: runnerctl check exited $status; the emulator's output:" >&2
	sed "s/$token/[token]/g" "$log/rie.out" | tail -n 50 >&2
fi
exit "$status"
