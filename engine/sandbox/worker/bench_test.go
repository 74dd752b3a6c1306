package worker

import (
	"context"
	"os"
	"testing"

	"github.com/runnerd/lambda-runner/engine/sandbox"
)

const benchCode = "return input.n.toString(2).split('').map(Number).reduce((a, b) => a + b, 0)"

// BenchmarkEvalWarm is one evaluation through the pool with its worker
// warm: a round trip over the pipes and a fresh runtime in the worker.
func BenchmarkEvalWarm(b *testing.B) {
	p := &sandbox.Pool{Options: sandbox.Options{Path: benchBinary()}}
	b.Cleanup(p.Close)
	req := request(benchCode)
	if _, err := p.Eval(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Eval(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalColdWorker is one evaluation in a worker started for it
// and stopped after: the cost of a worker that exits after each
// evaluation instead of keeping warm.
func BenchmarkEvalColdWorker(b *testing.B) {
	req := request(benchCode)
	for b.Loop() {
		p := &sandbox.Pool{Options: sandbox.Options{Path: benchBinary()}}
		if _, err := p.Eval(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkEvalInProcess is what a worker does for one request: a fresh
// goja runtime, compiling the body, parsing the input, calling, and
// stringifying the result.
func BenchmarkEvalInProcess(b *testing.B) {
	req := request(benchCode)
	for b.Loop() {
		if rep := Eval(req); rep.Error != nil {
			b.Fatal(rep.Error)
		}
	}
}

// benchBinary is the worker the benchmarks start: the codeworker command
// when RUNNER_TEST_CODE_WORKER names one (make test and bench-lambda build
// it: the process Lambda would start), else this test binary.
func benchBinary() string {
	if p := os.Getenv("RUNNER_TEST_CODE_WORKER"); p != "" {
		return p
	}
	return testBinary()
}
