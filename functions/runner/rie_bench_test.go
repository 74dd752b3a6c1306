//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
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
// a Bedrock-only build. When one is named bare, every sample of another
// build is paired with a start of bare right before or after it (the order
// alternating): bare-init-ms is the median of those, and init/bare the
// median of the pairs' ratios, which a load that changes over the run (a
// shared machine) moves far less than a ratio of two sub-benchmarks' medians
// taken seconds apart.
func BenchmarkLambdaColdStartRIE(b *testing.B) {
	boots := [][2]string{{"runner", bootstrapPath(b)}}
	for _, f := range strings.Fields(os.Getenv("RUNNER_TEST_BENCH_BOOTSTRAPS")) {
		name, path, ok := strings.Cut(f, "=")
		if !ok {
			b.Fatalf("RUNNER_TEST_BENCH_BOOTSTRAPS: %q is not name=path", f)
		}
		boots = append(boots, [2]string{name, path})
	}
	// Every build starts from a copy, as deployed (deployedCopy).
	dir := b.TempDir()
	bare := ""
	for i, boot := range boots {
		boots[i][1] = deployedCopy(b, boot[1], filepath.Join(dir, strconv.Itoa(i)+"-"+filepath.Base(boot[1])))
		if boot[0] == "bare" {
			bare = boots[i][1]
		}
	}
	for _, boot := range boots {
		yardstick := bare
		if boot[1] == bare {
			yardstick = ""
		}
		b.Run(boot[0], func(b *testing.B) { benchmarkColdStartRIE(b, boot[1], yardstick) })
	}
}

// benchmarkColdStartRIE times cold starts of boot, each paired with one of
// yardstick when it is not "".
func benchmarkColdStartRIE(b *testing.B, boot, yardstick string) {
	env := lambdaEnv(b, map[string]string{"LOG_LEVEL": "info"})
	ev := functionURLEvent("GET", "/v1/capabilities", testToken, "")
	var cold, inits, bareInits []time.Duration
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		var bareInit time.Duration
		if yardstick != "" && i%2 == 1 {
			_, bareInit = coldStartRIE(b, env, ev, yardstick)
		}
		c, init := coldStartRIE(b, env, ev, boot)
		if yardstick != "" && i%2 == 0 {
			_, bareInit = coldStartRIE(b, env, ev, yardstick)
		}
		cold, inits = append(cold, c), append(inits, init)
		if yardstick != "" {
			bareInits = append(bareInits, bareInit)
			ratios = append(ratios, float64(init)/float64(bareInit))
		}
		b.StartTimer()
	}
	extra := map[string][]time.Duration{"init-ms": inits}
	if yardstick != "" {
		extra["bare-init-ms"] = bareInits
		slices.Sort(ratios)
		b.ReportMetric(medianFloat(ratios), "init/bare")
	}
	reportMedian(b, cold, extra)
}

// coldStartRIE starts an emulator running boot, sends it ev and returns
// the time to the answer and the init phase the emulator reported.
func coldStartRIE(b *testing.B, env map[string]string, ev any, boot string) (cold, init time.Duration) {
	b.Helper()
	r := startRIEWith(b, env, boot)
	defer r.stop()
	start := time.Now()
	if p, _ := r.streamed(b, ev, ""); p.StatusCode != 200 {
		b.Fatalf("status %d", p.StatusCode)
	}
	cold = time.Since(start)
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if m := initReport.FindStringSubmatch(r.out.String()); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			return cold, time.Duration(ms * float64(time.Millisecond))
		}
		if time.Now().After(end) {
			b.Fatalf("no INIT REPORT in the emulator's log:\n%s", r.out.String())
		}
	}
}

// medianFloat of sorted values.
func medianFloat(v []float64) float64 {
	if n := len(v); n%2 == 1 {
		return v[n/2]
	} else {
		return (v[n/2-1] + v[n/2]) / 2
	}
}

// deployedCopy copies the executable at path to dst, written as a
// deployment writes it (Lambda unzipping the package, SAM copying the
// artifact): with write(2), and returns dst. The go linker writes its
// output through a shared mapping, and on this machine (ext4, Linux 6.18)
// a file written so stays in the page cache in a state that makes every
// later start of it slower: the same bytes took ≈1 ms longer to INIT under
// aws-lambda-rie from the linker's file than from a copy (the 19 MB
// Bedrock-only bootstrap; 0–0.5 ms for the 6 MB bare one), with the same
// pages mapped and page faults (bench/BASELINE.md, Round 7). A function
// never starts from the linker's file.
func deployedCopy(b *testing.B, path, dst string) string {
	b.Helper()
	src, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	// Plain reads and writes: no copy_file_range or sendfile.
	if _, err := io.Copy(struct{ io.Writer }{f}, struct{ io.Reader }{src}); err != nil {
		f.Close()
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return dst
}

// BenchmarkLambdaColdStartProcess: from starting the bootstrap process to
// the end of its answer to a first GET /v1/capabilities, against a runtime
// API with no emulator overhead. init-ms: to its first request for an
// event. It starts a copy of the bootstrap, as deployed (deployedCopy).
func BenchmarkLambdaColdStartProcess(b *testing.B) {
	env := lambdaEnv(b, nil)
	ev := functionURLEvent("GET", "/v1/capabilities", testToken, "")
	boot := deployedCopy(b, bootstrapPath(b), filepath.Join(b.TempDir(), "bootstrap"))
	var cold, inits []time.Duration
	for b.Loop() {
		b.StopTimer()
		a := startRuntimeAPIWith(b, env, boot)
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
