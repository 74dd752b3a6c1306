# The team's shared vocabulary: make run | test | build | bench | lint.
GO        ?= go
BIN       := bin
PKGS      := ./...
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK_VERSION := v0.8.2
GOBIN     ?= $(shell $(GO) env GOPATH)/bin
# The version the binary reports (capabilities runner.version): RUNNER_VERSION
# if set, else `git describe` in a git checkout, else the VERSION file that
# `make version` (run by `make sam-build`) writes, because `sam build` copies
# the tree without .git. See docs/deploy.md.
VERSION   := $(or $(RUNNER_VERSION),$(if $(wildcard .git),$(shell git describe --tags --always --dirty 2>/dev/null)),$(shell cat VERSION 2>/dev/null),dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# Architecture of the deployed bootstrap (template.yaml: arm64).
LAMBDA_GOARCH ?= arm64
# PROVIDERS: the model providers compiled in (docs/deploy.md), e.g.
# make build PROVIDERS=bedrock; each one left out is a no<name> build tag.
ALL_PROVIDERS := anthropic bedrock openai
PROVIDERS ?= $(ALL_PROVIDERS)
$(if $(filter-out $(ALL_PROVIDERS),$(PROVIDERS)),$(error PROVIDERS: unknown $(filter-out $(ALL_PROVIDERS),$(PROVIDERS)) (want some of $(ALL_PROVIDERS))))
# TRACING: on exports spans over OTLP/HTTP; grpc adds the OTLP/gRPC
# exporter (the otlpgrpc build tag, which links gRPC); off leaves the
# OpenTelemetry SDK and exporter out (the notracing build tag):
# OTEL_TRACES_EXPORTER=otlp then fails at start (docs/deploy.md).
TRACING ?= on
$(if $(filter-out on off grpc,$(TRACING)),$(error TRACING: want on, grpc or off, not $(TRACING)))
# AWSCONFIG: where the bootstrap reads its AWS configuration (Secrets
# Manager, Bedrock). env, the default: the variables Lambda sets (the
# awsenv build tag, infra/awsconfig), which keeps the SDK's credential
# chain (SSO, STS, ...) out of the binary and about 0.8 ms out of every
# cold start. full: the SDK's default chain (profiles, SSO, web identity,
# container and instance roles). make run always uses the full chain.
AWSCONFIG ?= env
$(if $(filter-out env full,$(AWSCONFIG)),$(error AWSCONFIG: want env or full, not $(AWSCONFIG)))
AWSTAG    := $(if $(filter env,$(AWSCONFIG)),awsenv)
# CODE: on builds the code node's sandbox worker, codeworker
# (functions/codeworker: the JavaScript engine goja, which the bootstrap
# never links), to ship beside bootstrap, where the runner finds it; off
# (the nocode build tag) builds no worker, and the runner then offers no
# code node (docs/deploy.md).
CODE ?= on
$(if $(filter-out on off,$(CODE)),$(error CODE: want on or off, not $(CODE)))
CODETAG   := $(if $(filter off,$(CODE)),nocode)
WORKER_LDFLAGS := -s -w
# The worker runs under RLIMIT_DATA (engine/sandbox/worker). Go 1.26's
# default garbage collector (greenteagc) leaves the kernel's refusal of its
# span queue's memory unchecked and faults, a crash in about one of four
# evaluations that exhaust the memory, instead of the runtime's "out of
# memory"; the previous collector reports it. Measured: 14 of 60 such
# evaluations faulted, 0 of 60 built this way.
WORKER_ENV := GOEXPERIMENT=nogreenteagc
# FANOUT: on links the Lambda client of distributed maps (about 0.33 MB since service/lambda v1.108.0;
# built on first use, but the package's init, its endpoint table among it,
# runs at every start: ≈0.2 ms of INIT); off (the nofanout build tag)
# leaves it out, and RUNNER_MAX_FANOUT_INVOCATIONS above 0 then stops the
# process at start (docs/deploy.md).
FANOUT ?= on
$(if $(filter-out on off,$(FANOUT)),$(error FANOUT: want on or off, not $(FANOUT)))
FANOUTTAG := $(if $(filter off,$(FANOUT)),nofanout)
# The SDKs behind model, MCP and AWS calls (and the modules only they use),
# and the OTLP exporter with its protobuf encoding, are compiled without
# inlining: their code runs once per call or span batch, behind a network
# round trip, and the inlined copies of it cost about 3.5 MB of the
# full bootstrap and 0.85 MB of a Bedrock-only one (docs/deploy.md,
# Bootstrap size). So are the runner's own packages whose code runs only
# at start (infra/config, infra/secrets, infra/tokens) or once per batch,
# execution or tool call behind a network round trip (engine/distribute,
# engine/services, engine/toolsets): their inlined copies kept the
# Bedrock-only bootstrap one 64 KiB page over its base after the engine's
# rooms moved out. The engine, the runtime and the rest are compiled as
# usual.
NOINLINE  := github.com/openai/... github.com/anthropics/... github.com/aws/aws-sdk-go-v2/... github.com/aws/smithy-go/... \
	github.com/modelcontextprotocol/... github.com/google/jsonschema-go/... github.com/segmentio/... github.com/yosida95/... \
	github.com/tidwall/... github.com/invopop/... github.com/buger/... github.com/pb33f/... go.yaml.in/... \
	github.com/coder/... github.com/standard-webhooks/... \
	google.golang.org/protobuf/... go.opentelemetry.io/proto/... go.opentelemetry.io/otel/exporters/... \
	github.com/runnerd/lambda-runner/engine/distribute github.com/runnerd/lambda-runner/engine/services github.com/runnerd/lambda-runner/engine/toolsets \
	github.com/runnerd/lambda-runner/infra/config github.com/runnerd/lambda-runner/infra/secrets github.com/runnerd/lambda-runner/infra/tokens
GCFLAGS   := $(foreach p,$(NOINLINE),-gcflags=$(p)=-l)
comma     := ,
empty     :=
space     := $(empty) $(empty)
TAGS      := $(subst $(space),$(comma),$(strip lambda.norpc $(addprefix no,$(filter-out $(PROVIDERS),$(ALL_PROVIDERS))) $(if $(filter off,$(TRACING)),notracing) $(if $(filter grpc,$(TRACING)),otlpgrpc) $(AWSTAG) $(CODETAG) $(FANOUTTAG)))
# The every-provider and Bedrock-only builds bench-lambda and size compare.
FULL_TAGS    := $(subst $(space),$(comma),$(strip lambda.norpc $(AWSTAG)))
BEDROCK_TAGS := $(subst $(space),$(comma),$(strip lambda.norpc noopenai noanthropic $(AWSTAG)))

.PHONY: run test test-deps test-short check-lambda build bench bench-compare bench-lambda size lint tools clean build-RunnerFunction version sam-build sam-cli

## run: the runner as a local HTTP server with a generated dev token (its
## code nodes' worker built first, and named by RUNNER_CODE_WORKER)
run: $(BIN)/codeworker-local
	RUNNER_CODE_WORKER=$(abspath $(BIN)/codeworker-local) $(GO) run ./functions/runner -dev

## test: the whole suite with the race detector, fuzz seed corpora included
test: test-deps $(BIN)/bootstrap-local $(BIN)/codeworker-local
	RUNNER_TEST_BOOTSTRAP=$(abspath $(BIN)/bootstrap-local) RUNNER_TEST_CODE_WORKER=$(abspath $(BIN)/codeworker-local) $(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(GO) test -race -count=1 -tags noopenai,noanthropic -run 'Registry|ProviderList|ProvidersCompiledIn' ./engine/models/ ./functions/runner/
	$(GO) test -race -count=1 -tags nocode -run 'CapabilitiesFromServices|BareDeployment' ./functions/runner/
	$(GO) test -race -count=1 -tags nofanout -run 'FanOutOff|BareDeployment' ./functions/runner/
	$(GO) test -race -count=1 -tags notracing ./infra/telemetry/
	$(GO) test -race -count=1 -tags otlpgrpc ./infra/telemetry/
	$(GO) test -race -count=1 -tags awsenv ./infra/awsconfig/
	$(GO) run ./cmd/runnerctl test --code-worker $(abspath $(BIN)/codeworker-local) examples/

## test-deps: what the suite runs beside Go, installed when missing:
## aws-lambda-rie (go install) for the Lambda emulator tests, and chromium
## (apt-get, when run as root on Debian or Ubuntu) for the playground's
## browser tests. Without chromium those tests skip, saying so; with
## CI=true they fail instead.
test-deps:
	@command -v aws-lambda-rie >/dev/null 2>&1 || test -x $(GOBIN)/aws-lambda-rie || \
		{ echo 'test-deps: installing aws-lambda-rie'; $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION); }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo 'test-deps: installing chromium'; apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
		else \
			echo 'test-deps: chromium not found and not installable here (needs root and apt-get): the playground browser tests will skip. Install it: apt-get install chromium'; \
		fi

## check-lambda: the conformance suite (runnerctl check) against the
## bootstrap as deployed, built for this machine, under aws-lambda-rie
## with a static token, through runnerctl bridge (function URL events);
## exits 0 only when no check fails (conformance/check-lambda.sh,
## docs/deploy.md)
check-lambda: $(BIN)/bootstrap-local $(BIN)/codeworker-local $(BIN)/runnerctl
	@command -v aws-lambda-rie >/dev/null 2>&1 || test -x $(GOBIN)/aws-lambda-rie || \
		{ echo 'check-lambda: aws-lambda-rie not found: run make tools'; exit 1; }
	BOOTSTRAP=$(BIN)/bootstrap-local WORKER=$(BIN)/codeworker-local RUNNERCTL=$(BIN)/runnerctl PATH="$(GOBIN):$$PATH" \
		bash conformance/check-lambda.sh

test-short:
	$(GO) test -short -count=1 $(PKGS)

## build: the Lambda bootstrap and, unless CODE=off, the code nodes' worker
## codeworker (linux/arm64), as SAM deploys them, and runnerctl for this machine
build: $(BIN)/bootstrap $(if $(filter on,$(CODE)),$(BIN)/codeworker) $(BIN)/runnerctl

$(BIN)/runnerctl: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/runnerctl

$(BIN)/bootstrap: FORCE
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $@ ./functions/runner

# The code nodes' sandbox worker, shipped beside bootstrap.
$(BIN)/codeworker: FORCE
	$(WORKER_ENV) GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(WORKER_LDFLAGS)" -o $@ ./functions/codeworker

# The same binaries for this machine, run under aws-lambda-rie by the tests
# (the bootstrap told where the worker is by RUNNER_CODE_WORKER).
$(BIN)/bootstrap-local: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $@ ./functions/runner

$(BIN)/codeworker-local: FORCE
	$(WORKER_ENV) CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(WORKER_LDFLAGS)" -o $@ ./functions/codeworker

# sam build calls this target (BuildMethod: makefile): bootstrap and, unless
# CODE=off, codeworker beside it in the function's package.
build-RunnerFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $(ARTIFACTS_DIR)/bootstrap ./functions/runner
	$(if $(filter on,$(CODE)),$(WORKER_ENV) GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(WORKER_LDFLAGS)" -o $(ARTIFACTS_DIR)/codeworker ./functions/codeworker)

## version: write VERSION (git describe) for builds from a copy without .git
version:
	@v=$$(git describe --tags --always --dirty 2>/dev/null) && [ -n "$$v" ] || { echo 'version: not a git checkout' >&2; exit 1; }; \
		echo "$$v" > VERSION; echo "VERSION $$v"

## sam-build: sam build with the commit's version baked in
sam-build: sam-cli version
	sam build

# sam-cli: the SAM CLI is there, or a message saying where to get it rather
# than make's "sam: No such file or directory".
sam-cli:
	@command -v sam >/dev/null 2>&1 || { echo 'sam: not found — install the AWS SAM CLI (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/install-sam-cli.html)' >&2; exit 1; }

## bench: in-process benchmarks (figures as medians of -count runs)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./protocol/ ./engine/ ./functions/ | tee bench.out

## bench-compare: the runner over HTTP (curl-timed, local server) against
## cloudwego/eino in process, on the same shapes in one run, with the
## engine's own figure (BenchmarkInProcess), the floor (bench/floor, a
## server that only carries bytes) and the upload (bench/floor taking each
## shape's body, answering a one-node stream) with the bound it sets on
## HTTP / engine, then issue 21's targets said met or not:
## bench/compare.sh, RUNS, WARM, OUTDIR and
## CONN (keep: one kept-alive connection; new: one per request) as there.
## bench/eino is a module of its own: eino is downloaded
## only here, never by make test or lint.
bench-compare:
	cd bench/eino && $(GO) vet .
	GO=$(GO) bash bench/compare.sh

## bench-lambda: Lambda figures: bootstrap sizes (linux/arm64 stripped, as
## deployed), cold start (INIT) and time to accepted under aws-lambda-rie
## (medians), the runner beside a Bedrock-only build and a bare lambdaurl
## function built in the same run (functions/runner/testdata/bare)
BENCH_LAMBDA_RUNS ?= 11
BENCH_BUILDS := bootstrap bootstrap-bedrock bare codeworker
bench-lambda: $(BIN)/bootstrap $(BIN)/bootstrap-local $(BIN)/codeworker $(BIN)/codeworker-local
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags $(BEDROCK_TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/bootstrap-bedrock ./functions/runner
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(BEDROCK_TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/bootstrap-bedrock-local ./functions/runner
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" -o $(BIN)/bare ./functions/runner/testdata/bare
	CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" -o $(BIN)/bare-local ./functions/runner/testdata/bare
	@for f in $(BENCH_BUILDS); do \
		wc -c < $(BIN)/$$f | awk -v f=$$f '{ printf "size linux/arm64 %-18s %9d bytes  %6.2f MB\n", f, $$1, $$1 / 1e6 }'; \
	done | tee bench-lambda.out
	RUNNER_TEST_BOOTSTRAP=$(abspath $(BIN)/bootstrap-local) RUNNER_TEST_CODE_WORKER=$(abspath $(BIN)/codeworker-local) \
	RUNNER_TEST_BENCH_BOOTSTRAPS="bedrock-only=$(abspath $(BIN)/bootstrap-bedrock-local) bare=$(abspath $(BIN)/bare-local)" \
	$(GO) test -run '^$$' -bench Lambda \
		-benchtime $(BENCH_LAMBDA_RUNS)x -count 1 -timeout 10m ./functions/runner/ | tee -a bench-lambda.out

## size: the bootstrap budgets (linux/arm64 stripped, tracing on), what
## round 7 measured plus about 0.4 MB (bench/BASELINE.md): 43.1 MB with
## every provider, 16.7 MB Bedrock-only, 16.2 MB Bedrock-only without the
## code node and distributed maps (CODE=off FANOUT=off); the code nodes'
## worker, shipped beside the bootstrap, is reported, not budgeted
SIZE_BUDGET_FULL           := 43100000
SIZE_BUDGET_BEDROCK        := 16700000
SIZE_BUDGET_BEDROCK_NOCODE := 16200000
size: $(BIN)/codeworker
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags $(FULL_TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/size-full ./functions/runner
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags $(BEDROCK_TAGS) $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/size-bedrock ./functions/runner
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags $(BEDROCK_TAGS),nocode,nofanout $(GCFLAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/size-bedrock-nocode ./functions/runner
	@wc -c < $(BIN)/codeworker | awk '{ printf "size %-14s %6.2f MB (shipped beside bootstrap unless CODE=off; not budgeted)\n", "codeworker", $$1 / 1e6 }'
	@ok=0; for fb in full:$(SIZE_BUDGET_FULL) bedrock:$(SIZE_BUDGET_BEDROCK) bedrock-nocode:$(SIZE_BUDGET_BEDROCK_NOCODE); do \
		f=$${fb%%:*}; b=$${fb#*:}; n=$$(wc -c < $(BIN)/size-$$f); \
		if [ $$n -le $$b ]; then v=ok; else v=OVER; ok=1; fi; \
		echo "$$n $$b $$f $$v" | awk '{ printf "size %-14s %6.2f MB (budget %5.2f MB, %+.2f MB) %s\n", $$3, $$1 / 1e6, $$2 / 1e6, ($$2 - $$1) / 1e6, $$4 }'; \
	done; exit $$ok

## lint: gofmt, go vet, staticcheck, cfn-lint on template.yaml
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: run gofmt -w'; exit 1)
	$(GO) mod tidy -diff
	$(GO) vet $(PKGS)
	bash -n bench/compare.sh
	$(GOBIN)/staticcheck $(PKGS)
	@command -v cfn-lint >/dev/null || { echo 'lint: cfn-lint not found (pip install cfn-lint, or apt-get install cfn-lint where Debian has it)'; exit 1; }
	cfn-lint template.yaml

## tools: what test and lint need beyond Go itself
tools:
	$(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

clean:
	rm -rf $(BIN) bench.out bench-lambda.out .aws-sam VERSION

FORCE:
