//go:build unix

package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Lambda figures (make bench-lambda). Each benchmark times its own
// samples and reports their median as ns/op (run with -benchtime Nx for N
// samples); the extra metrics are medians too, in milliseconds.

// median of the samples, in place.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	if n := len(ds); n%2 == 1 {
		return ds[n/2]
	} else {
		return (ds[n/2-1] + ds[n/2]) / 2
	}
}

func reportMedian(b *testing.B, ds []time.Duration, extra map[string][]time.Duration) {
	b.ReportMetric(float64(median(ds).Nanoseconds()), "ns/op")
	for unit, s := range extra {
		b.ReportMetric(float64(median(s).Microseconds())/1000, unit)
	}
}

// initReport is the emulator's report of the init phase: from starting the
// bootstrap to its first request for an event.
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// BenchmarkLambdaColdStartRIE: a fresh emulator per sample (not timed),
// then its first invocation, GET /v1/capabilities: the emulator starts the
// bootstrap process, which initialises, takes the event and answers.
// init-ms is the init phase the emulator reports (process start to the
// runtime's first request for an event), Lambda's Init Duration.
//
// Beside the runner (RUNNER_TEST_BOOTSTRAP), make bench-lambda measures in
// the same run the builds named by RUNNER_TEST_BENCH_BOOTSTRAPS, a list of
// name=path: a bare lambdaurl function (testdata/bare), the yardstick, and
// a Bedrock-only build.
func BenchmarkLambdaColdStartRIE(b *testing.B) {
	boots := [][2]string{{"runner", bootstrapPath(b)}}
	for _, f := range strings.Fields(os.Getenv("RUNNER_TEST_BENCH_BOOTSTRAPS")) {
		name, path, ok := strings.Cut(f, "=")
		if !ok {
			b.Fatalf("RUNNER_TEST_BENCH_BOOTSTRAPS: %q is not name=path", f)
		}
		boots = append(boots, [2]string{name, path})
	}
	for _, boot := range boots {
		b.Run(boot[0], func(b *testing.B) { benchmarkColdStartRIE(b, boot[1]) })
	}
}

func benchmarkColdStartRIE(b *testing.B, boot string) {
	env := lambdaEnv(b, map[string]string{"LOG_LEVEL": "info"})
	ev := functionURLEvent("GET", "/v1/capabilities", testToken, "")
	var cold, inits []time.Duration
	for b.Loop() {
		b.StopTimer()
		r := startRIEWith(b, env, boot)
		start := time.Now()
		if p, _ := r.streamed(b, ev, ""); p.StatusCode != 200 {
			b.Fatalf("status %d", p.StatusCode)
		}
		cold = append(cold, time.Since(start))
		for end := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if m := initReport.FindStringSubmatch(r.out.String()); m != nil {
				ms, _ := strconv.ParseFloat(m[1], 64)
				inits = append(inits, time.Duration(ms*float64(time.Millisecond)))
				break
			}
			if time.Now().After(end) {
				b.Fatalf("no INIT REPORT in the emulator's log:\n%s", r.out.String())
			}
		}
		r.stop()
		b.StartTimer()
	}
	reportMedian(b, cold, map[string][]time.Duration{"init-ms": inits})
}

// BenchmarkLambdaColdStartProcess: from starting the bootstrap process to
// the end of its answer to a first GET /v1/capabilities, against a runtime
// API with no emulator overhead. init-ms: to its first request for an
// event.
func BenchmarkLambdaColdStartProcess(b *testing.B) {
	env := lambdaEnv(b, nil)
	ev := functionURLEvent("GET", "/v1/capabilities", testToken, "")
	var cold, inits []time.Duration
	for b.Loop() {
		b.StopTimer()
		a := startRuntimeAPI(b, env)
		inv := a.invoke(b, ev, time.Now().Add(time.Minute))
		cold = append(cold, inv.doneAt.Sub(a.started))
		inits = append(inits, a.readyTime().Sub(a.started))
		a.stop()
		b.StartTimer()
	}
	reportMedian(b, cold, map[string][]time.Duration{"init-ms": inits})
}

// BenchmarkLambdaAcceptedRIE: a warm function, POST /v1/executions of the
// hello workflow through the emulator. The emulator answers only once the
// response is complete, so this is the time to the whole stream: an upper
// bound of the time to accepted.
func BenchmarkLambdaAcceptedRIE(b *testing.B) {
	r := startRIE(b, lambdaEnv(b, nil))
	ev := functionURLEvent("POST", "/v1/executions", testToken, helloBody(b))
	r.streamed(b, ev, "") // cold start, not measured
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if p, _ := r.streamed(b, ev, ""); p.StatusCode != 200 {
			b.Fatalf("status %d", p.StatusCode)
		}
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds, nil)
}

// BenchmarkLambdaAcceptedStreamed: a warm function, from handing out the
// execution event to the arrival of the accepted line at the runtime API,
// as a function URL's stream carries it; total-ms is to the end of the
// stream.
func BenchmarkLambdaAcceptedStreamed(b *testing.B) {
	a := startRuntimeAPI(b, lambdaEnv(b, nil))
	ev := functionURLEvent("POST", "/v1/executions", testToken, helloBody(b))
	a.invoke(b, ev, time.Now().Add(time.Minute)) // cold start, not measured
	var accepted, total []time.Duration
	for b.Loop() {
		inv := a.invoke(b, ev, time.Now().Add(time.Minute))
		if len(inv.lineAt) == 0 {
			b.Fatalf("no events: %q", inv.raw)
		}
		accepted = append(accepted, inv.lineAt[0].Sub(inv.queued))
		total = append(total, inv.doneAt.Sub(inv.queued))
	}
	reportMedian(b, accepted, map[string][]time.Duration{"total-ms": total})
}

// BenchmarkLambdaColdAccepted: a fresh process per sample whose first
// invocation is POST /v1/executions of a one-node workflow. ms-to-accepted
// is from the runtime's first request for an event (the end of init) to
// the arrival of the accepted line: what a cold process adds before
// acceptance on top of INIT (target: under 5 ms).
func BenchmarkLambdaColdAccepted(b *testing.B) {
	env := lambdaEnv(b, nil)
	ev := functionURLEvent("POST", "/v1/executions", testToken,
		`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`)
	var accepted []time.Duration
	for b.Loop() {
		b.StopTimer()
		a := startRuntimeAPI(b, env)
		inv := a.invoke(b, ev, time.Now().Add(time.Minute))
		if len(inv.lineAt) == 0 {
			b.Fatalf("no events: %q", inv.raw)
		}
		accepted = append(accepted, inv.lineAt[0].Sub(a.readyTime()))
		a.stop()
		b.StartTimer()
	}
	reportMedian(b, accepted, map[string][]time.Duration{"ms-to-accepted": accepted})
}
