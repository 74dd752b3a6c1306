// Command runner is the workflow runner: the Lambda bootstrap when run by the
// Lambda runtime (AWS_LAMBDA_RUNTIME_API set), a plain HTTP server anywhere
// else. It only wires: configuration, token source, engine and handler.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/functions/playground"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/gcstart"
	"github.com/runnerd/lambda-runner/infra/telemetry"
	"github.com/runnerd/lambda-runner/infra/tokens"
)

// gcPercent is the GC target unless GOGC is set. gcstart sets it already,
// before the other packages' init; run sets it again for callers (tests)
// that pass their own environment.
const gcPercent = gcstart.Percent

// runnerName is how the runner names itself: in capabilities, to MCP
// servers, and to traces when the function has no name.
const runnerName = "runnerd-lambda"

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	watchSignals = sync.OnceFunc(func() { go stopOnSignal(stop) })
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}

// watchSignals starts stopOnSignal, once; main sets it (tests leave it a
// no-op). The first signal.Notify has the Go runtime start a thread to
// hold the signal mask, ≈0.3 ms, and even in a goroutine of its own that
// work competed with the rest of INIT for the CPU (0.84 → 0.38 ms from
// main to serving without it, medians of 41 starts; under Lambda a
// function has a fraction of a core). So a local server watches signals
// from the moment it serves, and a Lambda bootstrap only when it exports
// traces, from its first invocation (serveLambda): without an extension
// Lambda never sends SIGTERM, and without traces to flush the default
// action (exit) loses nothing. A signal before then kills the process, as
// one during package init always does.
var watchSignals = func() {}

// stopOnSignal calls stop at the first SIGINT or SIGTERM: under Lambda the
// runtime sends SIGTERM before shutdown only when an extension is
// registered (a telemetry collector's, say), and traces are flushed then.
func stopOnSignal(stop context.CancelFunc) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	<-c
	// A second signal has its default action: a local server draining
	// its executions (serveLocal) can be stopped at once.
	signal.Stop(c)
	stop()
}

// run is main with its dependencies passed in, so tests can drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dev := fs.Bool("dev", false, "local development: generate a random bearer token, print it once, log as text")
	showVersion := fs.Bool("version", false, "print the version and exit")
	check := fs.Bool("check", false, "check the configuration in the environment (RUNNER_MODELS included) and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintln(stdout, version)
		return nil
	}
	cfg, err := config.Load(getenv)
	serving := false
	if cfg.RuntimeAPI != "" && !*check {
		// Under Lambda a startup failure is told to the runtime API, so
		// that the first invocation fails with the message (naming the
		// variable at fault) instead of a bare Runtime.ExitError.
		defer func() {
			if err != nil && !serving {
				reportInitError(ctx, cfg.RuntimeAPI, err)
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	cfg.Dev = *dev
	if getenv("GOMEMLIMIT") == "" {
		// Leave a tenth of the function's memory to the runtime and the
		// stack; the GC works harder before Lambda would kill us.
		// Unset (a local server), it is the engine's default: a limit of
		// 0 would have the GC run without pause.
		mb := cfg.MemoryMB
		if mb == 0 {
			mb = engine.DefaultMemoryMB
		}
		debug.SetMemoryLimit(int64(mb) << 20 * 9 / 10)
	}
	if getenv("GOGC") == "" {
		// The memory limit, not GOGC's 100%, is what keeps the heap inside
		// the function: collect less often until it nears (docs/deploy.md).
		debug.SetGCPercent(gcPercent)
	}
	logger := newLogger(cfg, *dev, stderr)
	if *check {
		// What starting would build and refuse: the model table, the
		// egress rules and the code nodes' worker.
		if _, err := services(ctx, cfg, nil); err != nil {
			return err
		}
		if _, err := codeRunner(cfg, limits(cfg), logger); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}

	var devToken string
	if *dev && len(cfg.Tokens) == 0 && cfg.TokenSecretID == "" {
		devToken = randomToken()
		cfg.Tokens = []string{devToken}
	}
	src, err := tokenSource(cfg)
	if err != nil {
		return err
	}
	tr, err := newTracing(ctx, cfg)
	if err != nil {
		return err
	}
	if tr != nil {
		defer shutdownTracing(ctx, tr, logger)()
	}
	h, err := newHandler(ctx, cfg, src, logger, stdout, tr)
	if err != nil {
		return err
	}
	if cfg.Lambda {
		serving = true
		return serveLambda(ctx, served(h, tr), h.Engine, cfg, logger, tr)
	}
	watchSignals()
	err = serveLocal(ctx, h, served(h, tr), cfg, devToken, stdout, logger)
	// The goodbyes to MCP servers of executions that have finished run
	// after their streams end, each bounded by the close reserve: let them
	// finish before the process exits.
	h.Engine.WaitClosed()
	return err
}

// shutdownTracing flushes and stops tr once, when ctx ends (SIGTERM: under
// Lambda the runtime loop never returns, and the process has a moment
// before it is killed) or when the returned function runs (run returning).
func shutdownTracing(ctx context.Context, tr *telemetry.Tracing, logger *slog.Logger) func() {
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
			defer cancel()
			if err := tr.Shutdown(ctx); err != nil {
				logger.Warn("trace export at shutdown", "err", err)
			}
		})
	}
	stop := context.AfterFunc(ctx, shutdown)
	return func() {
		stop()
		shutdown()
	}
}

// tokenSource picks Secrets Manager when a secret is configured, else the
// static tokens, and refuses to start with neither.
func tokenSource(cfg config.Config) (functions.TokenSource, error) {
	switch {
	case cfg.TokenSecretID != "":
		return secretsSource(cfg), nil
	case len(cfg.Tokens) > 0:
		return tokens.Static{Set: tokens.NewSet(cfg.Tokens...)}, nil
	}
	return nil, errors.New("no bearer tokens: set RUNNER_TOKEN_SECRET_ID (Secrets Manager) or RUNNER_TOKENS, or run with -dev for a generated token")
}

// defaultDrain is how long a local server stopped by a signal waits for
// its executions before cancelling them (RUNNER_DRAIN_SECONDS): within
// the 30 seconds an orchestrator commonly grants (Kubernetes'
// terminationGracePeriodSeconds, ECS's stopTimeout), the cancelled ones'
// terminal events included.
const defaultDrain = 25 * time.Second

// shutdownGrace bounds the end of a shutdown once the executions have
// ended: cancelled executions writing their terminal events, and the
// server closing its connections.
const shutdownGrace = 5 * time.Second

// serveLocal serves h, api's handler as served, on cfg.Addr until ctx
// ends, then drains: api admits no new execution (503, and 503 at the
// readiness route), the running ones have cfg.DrainTimeout to end before
// they are cancelled, each ending with its terminal event; then the
// server closes.
func serveLocal(ctx context.Context, api *functions.Handler, h http.Handler, cfg config.Config, devToken string, stdout io.Writer, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	// The playground page beside the API, for both a Host allowlist and
	// cross-origin protection (docs/playground.md); the readiness route
	// answers whatever the Host, as probes name the server by address.
	guarded := playground.NewNamed(h, playground.AllowHosts(cfg.AllowedHosts, cfg.Dev))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == functions.PathHealth {
				h.ServeHTTP(w, r)
				return
			}
			guarded.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: streams last as long as their execution.
		IdleTimeout: 2 * time.Minute,
	}
	base := "http://" + ln.Addr().String()
	if devToken != "" {
		fmt.Fprintf(stdout, "runner %s listening on %s\n\n", version, base)
		if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
			// The Host allowlist keeps browsers' pages out (DNS
			// rebinding), not other machines: any client sending
			// "Host: localhost" with the token is served.
			fmt.Fprintf(stdout, "warning: %s is not the loopback: any machine that reaches it and has the dev token can run workflows here, over plain HTTP\n\n", ln.Addr())
		}
		fmt.Fprintf(stdout, "dev token (printed once): %s\n\n", devToken)
		fmt.Fprintf(stdout, "try:\n  export RUNNER_TOKEN=%s\n", devToken)
		fmt.Fprintf(stdout, "  curl -s -H \"Authorization: Bearer $RUNNER_TOKEN\" %s/v1/capabilities\n", base)
		fmt.Fprintf(stdout, "  curl -sN -H \"Authorization: Bearer $RUNNER_TOKEN\" --data-binary @examples/hello.json %s/v1/executions\n\n", base)
		fmt.Fprintf(stdout, "playground (open in a browser; the token stays in the fragment):\n  %s\n\n", playground.URL(pageBase(ln.Addr()), devToken))
	}
	// Without a dev token (RUNNER_TOKENS, a secret) the page is still
	// there, and asks for a token: its address, never a token, is logged.
	logger.Info("listening", "addr", base, "playground", pageBase(ln.Addr())+playground.Path, "version", version, "maxExecutions", api.MaxExecutions)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain := cfg.DrainTimeout
	if drain <= 0 {
		drain = defaultDrain
	}
	logger.Info("shutting down", "running", api.Running(), "drainSeconds", drain.Seconds())
	drainCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	stopCtx, cancelStop := context.WithTimeout(context.Background(), drain+shutdownGrace)
	defer cancelStop()
	if err := api.Drain(drainCtx, stopCtx); err != nil {
		logger.Warn("drain", "err", err)
	}
	shutdown, cancelShutdown := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancelShutdown()
	return srv.Shutdown(shutdown)
}

// pageBase is where a browser reaches the playground of a server listening
// at addr: a listener on every address (":8080") is reached, and answers
// the playground, only as the loopback.
func pageBase(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return "http://" + addr.String()
}

func newLogger(cfg config.Config, dev bool, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if dev {
		return slog.New(telemetry.NewLogHandler(slog.NewTextHandler(w, opts)))
	}
	// Under Lambda every record also gets the invocation's request id.
	return slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(w, opts)))
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "dev_" + base64.RawURLEncoding.EncodeToString(b)
}
