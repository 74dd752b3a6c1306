package worker

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
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

// benchCheckCode is a code node's body of a typical size (examples/code.json).
const benchCheckCode = `const byLabel = {};
for (const issue of input.issues) {
  const score = issue.reactions * 2 + issue.comments;
  for (const label of issue.labels) {
    (byLabel[label] ??= []).push({id: issue.id, score});
  }
}
for (const l in byLabel) byLabel[l].sort((a, b) => b.score - a.score);
return {byLabel, topBug: byLabel.bug?.[0]?.id ?? null};`

// BenchmarkCheckInProcess is the syntax check as the runner ran it before
// it moved to the worker: goja's parser in the runner's process.
func BenchmarkCheckInProcess(b *testing.B) {
	for b.Loop() {
		if err := syntax.Check(benchCheckCode); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckWarm is the syntax check of a body not seen before
// through the pool, its worker warm: what each new code node's Prepare
// costs after the first.
func BenchmarkCheckWarm(b *testing.B) {
	p := &sandbox.Pool{Options: sandbox.Options{Path: benchBinary()}}
	b.Cleanup(p.Close)
	if err := p.Check(context.Background(), benchCheckCode); err != nil {
		b.Fatal(err)
	}
	codes := make([]string, b.N)
	for i := range codes {
		codes[i] = benchCheckCode + "\n// " + strconv.Itoa(i)
	}
	b.ResetTimer()
	for i := range b.N {
		if err := p.Check(context.Background(), codes[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckRemembered is the check of a body found valid before (a
// workflow sent again): no worker is asked.
func BenchmarkCheckRemembered(b *testing.B) {
	p := &sandbox.Pool{Options: sandbox.Options{Path: benchBinary()}}
	b.Cleanup(p.Close)
	if err := p.Check(context.Background(), benchCheckCode); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := p.Check(context.Background(), benchCheckCode); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckColdWorker is the first check of a pool: the worker
// started for it (and, in a runner, kept warm for the evaluations).
func BenchmarkCheckColdWorker(b *testing.B) {
	for b.Loop() {
		p := &sandbox.Pool{Options: sandbox.Options{Path: benchBinary()}}
		if err := p.Check(context.Background(), benchCheckCode); err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
