package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
	"github.com/runnerd/lambda-runner/protocol"
)

// codeEngine is an engine whose code nodes run in workers that are this
// test binary (TestMain), under limits l.
func codeEngine(t testing.TB, l Limits) (*Engine, *sandbox.Pool) {
	t.Helper()
	e := New(l)
	l = l.WithDefaults()
	p := &sandbox.Pool{Options: sandbox.Options{Path: os.Args[0], Workers: 2, MemoryBytes: l.MaxCodeMemory}}
	t.Cleanup(p.Close)
	e.Services.Code = p
	return e, p
}

func codeDoc(nodes string) string { return `{"nodes":[` + nodes + `]}` }

func TestCodeNode(t *testing.T) {
	e, _ := codeEngine(t, Limits{})
	body := `{"version":1,"trace":true,"input":{"items":[3,1,2]},"workflow":` + codeDoc(`
		{"id":"sort","type":"code","with":{"input":"${{ input.items }}","code":"console.log('sorting', input.length);\nreturn input.toSorted((a, b) => a - b)"}},
		{"id":"sum","type":"code","needs":["sort"],"with":{"input":{"xs":"${{ nodes.sort.output }}","k":"${{ 10 }}"},"code":"return {total: input.xs.reduce((a, b) => a + b, 0) * input.k, n: undefined}"}},
		{"id":"nothing","type":"code","needs":["sum"],"with":{"code":"if (input !== null) throw new Error('input'); return undefined"}}`) + `}`
	s, _ := runBody(t, e, body)
	wantOutput(t, s.result(t), `{"nothing":null}`)
	for _, ev := range s.all() {
		if c, ok := ev.(*protocol.NodeCompleted); ok && c.NodeID == "sort" {
			if string(c.Logs) != `["sorting 3"]` || string(c.Output) != `[1,2,3]` {
				t.Errorf("sort completed with output %s logs %s", c.Output, c.Logs)
			}
		}
		if c, ok := ev.(*protocol.NodeCompleted); ok && c.NodeID == "sum" && string(c.Output) != `{"total":60}` {
			t.Errorf("sum output %s", c.Output)
		}
	}
}

func TestCodeNodeFailures(t *testing.T) {
	e, p := codeEngine(t, Limits{MaxOutputBytes: 1 << 10, MaxCodeLogBytes: 1 << 10})
	tests := []struct {
		name, node string
		code       protocol.Code
		msg        string
	}{
		{"thrown", `{"id":"c","type":"code","with":{"code":"const a = 1;\n  null.x"}}`, protocol.CodeCodeError, "line 2, column"},
		{"timeout", `{"id":"c","type":"code","timeoutMs":200,"with":{"code":"for (;;) {}"}}`, protocol.CodeTimeout, "timed out"},
		{"memory", `{"id":"c","type":"code","with":{"code":"const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)"}}`, protocol.CodeLimitExceeded, "maxCodeMemoryBytes"},
		{"output", `{"id":"c","type":"code","with":{"code":"return 'x'.repeat(2000)"}}`, protocol.CodeOutputTooLarge, "maxOutputBytes"},
		{"logs", `{"id":"c","type":"code","with":{"code":"console.log('x'.repeat(2000))"}}`, protocol.CodeLimitExceeded, "maxCodeLogBytes"},
		{"stack", `{"id":"c","type":"code","with":{"code":"const f = () => f(); f()"}}`, protocol.CodeLimitExceeded, "call stack"},
		{"deep output", `{"id":"c","type":"code","with":{"code":"let v = 1; for (let i = 0; i < 200; i++) v = [v]; return v"}}`, protocol.CodeLimitExceeded, "maxDepth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			s, _ := runBody(t, e, reqBody(codeDoc(tt.node), ""))
			f := s.nodeFailed("c")
			if f == nil {
				t.Fatalf("no node.failed; events %v", s.all())
			}
			if f.Error.Code != tt.code || !strings.Contains(f.Error.Message, tt.msg) {
				t.Errorf("node.failed %s: %q, want %s with %q", f.Error.Code, f.Error.Message, tt.code, tt.msg)
			}
			if f.Retrying {
				t.Error("a code node's own failure is retried")
			}
			t.Logf("%v: %s", time.Since(start), f.Error.Message)
		})
	}
	// Workers that ended (the timeout, the memory limit) were replaced;
	// the others were kept.
	if n := p.Started(); n > 4 {
		t.Errorf("%d workers started for %d evaluations", n, len(tests))
	}
}

func TestCodeNodePrepare(t *testing.T) {
	e, p := codeEngine(t, Limits{MaxCodeBytes: 64})
	tests := []struct{ name, node, path, msg string }{
		{"syntax", `{"id":"c","type":"code","with":{"code":"let x = 1;\nreturn x +"}}`, "workflow.nodes[0].with.code", `node "c": SyntaxError: Unexpected end of input at line 2, column 11`},
		{"token", `{"id":"c","type":"code","with":{"code":"return )"}}`, "workflow.nodes[0].with.code", `node "c": SyntaxError: Unexpected token ) at line 1, column 8`},
		{"unclosed", `{"id":"c","type":"code","with":{"code":"` + strings.Repeat("[", 60) + `"}}`, "workflow.nodes[0].with.code", "SyntaxError: Unexpected end of input at line 1, column 61"},
		{"size", `{"id":"c","type":"code","with":{"code":"` + strings.Repeat("1;", 40) + `"}}`, "workflow.nodes[0].with.code", "over maxCodeBytes (64)"},
		{"missing", `{"id":"c","type":"code","with":{}}`, "workflow.nodes[0].with", "code"},
		{"not a string", `{"id":"c","type":"code","with":{"code":1}}`, "workflow.nodes[0].with.code", ""},
		{"unknown field", `{"id":"c","type":"code","with":{"code":"","env":{}}}`, "workflow.nodes[0].with", "env"},
		{"secrets", `{"id":"c","type":"code","with":{"code":"","input":"${{ secrets.key }}"}}`, "workflow.nodes[0].with.input", "secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"version":1,"workflow":` + codeDoc(tt.node) + `,"runtime":{"http":{"secrets":{"key":{"value":"s3cret","hosts":["x.example"]}}}}}`
			inv := prepareInvalid(t, e, body)
			ok := false
			for _, d := range inv.Details {
				ok = ok || d.Path == tt.path && strings.Contains(d.Message, tt.msg)
			}
			if !ok {
				b, _ := json.Marshal(inv.Details)
				t.Errorf("details %s, want one at %s with %q", b, tt.path, tt.msg)
			}
		})
	}
	// The syntax was checked by a worker of the pool (the runner links no
	// parser), one kept warm for every check.
	if n := p.Started(); n != 1 {
		t.Errorf("%d workers started for the checks, want 1", n)
	}
	// Without a sandbox the node type is neither offered nor accepted.
	bare := New(Limits{})
	for _, typ := range bare.NodeTypes() {
		if typ == "code" {
			t.Error("an engine without Services.Code lists the code node type")
		}
	}
	inv := prepareInvalid(t, bare, reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":"return 1"}}`), ""))
	if !strings.Contains(inv.Details[0].Message, "not available") {
		t.Errorf("details %+v", inv.Details)
	}
}

// A runner whose worker cannot start refuses a code node before
// acceptance, naming the node, the field and why: its syntax could not be
// checked. Nesting beyond sandbox.MaxNesting is refused without a worker.
func TestCodeNodeCheckWithoutWorker(t *testing.T) {
	e := New(Limits{})
	path := filepath.Join(t.TempDir(), sandbox.WorkerName)
	p := &sandbox.Pool{Options: sandbox.Options{Path: path}}
	t.Cleanup(p.Close)
	e.Services.Code = p
	for _, tt := range []struct{ code, msg string }{
		{"return 1", `node "c": the code could not be checked: the sandbox worker could not start: fork/exec ` + path},
		{strings.Repeat("(", sandbox.MaxNesting+1), `node "c": SyntaxError: brackets nest deeper than 256 at line 1, column 257`},
	} {
		code, _ := json.Marshal(tt.code)
		inv := prepareInvalid(t, e, reqBody(codeDoc(`{"id":"c","type":"code","with":{"code":`+string(code)+`}}`), ""))
		if len(inv.Details) != 1 || inv.Details[0].Path != "workflow.nodes[0].with.code" || !strings.Contains(inv.Details[0].Message, tt.msg) {
			t.Errorf("details %+v, want one at workflow.nodes[0].with.code with %q", inv.Details, tt.msg)
		}
	}
}

// examples/code.json runs as examples/README.md and docs/workflows.md say.
func TestCodeExample(t *testing.T) {
	b, err := os.ReadFile("../examples/code.json")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := codeEngine(t, Limits{})
	s, _ := runBody(t, e, string(b))
	wantOutput(t, s.result(t), `{"byLabel":{"bug":[{"id":4,"score":16},{"id":1,"score":10}],"feature":[{"id":2,"score":6}]},"topBug":4}`)
}

// BenchmarkCodeMap1000 is a map of 1,000 items, each through a code node,
// end to end (events written as NDJSON), with the pool's workers warm and
// as many as the default limits allow at once (two at 512 MB).
func BenchmarkCodeMap1000(b *testing.B) {
	l := benchLimits()
	e := New(l)
	l = l.WithDefaults()
	p := &sandbox.Pool{Options: sandbox.Options{Path: os.Args[0], Workers: max(1, int(l.MemoryBudget/l.MaxCodeMemory))}}
	b.Cleanup(p.Close)
	e.Services.Code = p
	items := make([]string, 1000)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	body := `{"version":1,"input":{"items":[` + strings.Join(items, ",") + `]},"workflow":{"nodes":[{"id":"each","type":"map",` +
		`"with":{"items":"${{ input.items }}","nodes":[{"id":"sq","type":"code","with":{"input":"${{ item }}","code":"return input * input"}}],` +
		`"output":"${{ nodes.sq.output }}"}}],"output":{"n":"${{ len(nodes.each.output) }}"}}}`
	// The first run warms the workers; the benchmark's map counts 1,001
	// nodes (the map and its iterations).
	x := prepareReq(b, e, body)
	x.Run(context.Background(), &benchSink{Writer: protocol.NewWriter(io.Discard, "bench", nil)})
	benchmarkRunOn(b, e, body, 1001)
}

// BenchmarkPrepareCodeExample is Prepare of examples/code.json (two code
// nodes) as a runner's first code document, with the syntax checked: in
// process (goja's parser, as before the check moved to the worker), by a
// pool's first worker, started for it (and kept for the evaluation), and
// by a warm worker, the body new to it. The worker is the codeworker
// command when RUNNER_TEST_CODE_WORKER names one, else this test binary.
func BenchmarkPrepareCodeExample(b *testing.B) {
	raw, err := os.ReadFile("../examples/code.json")
	if err != nil {
		b.Fatal(err)
	}
	worker := os.Getenv("RUNNER_TEST_CODE_WORKER")
	if worker == "" {
		worker = os.Args[0]
	}
	prepare := func(b *testing.B, e *Engine, body []byte) {
		x, err := e.PrepareBody(body)
		if err != nil {
			b.Fatal(err)
		}
		x.discard()
	}
	b.Run("in-process", func(b *testing.B) {
		e := New(Limits{})
		e.Services.Code = syntax.Checker{}
		for b.Loop() {
			prepare(b, e, raw)
		}
	})
	b.Run("cold-worker", func(b *testing.B) {
		e := New(Limits{})
		for b.Loop() {
			p := &sandbox.Pool{Options: sandbox.Options{Path: worker}}
			e.Services.Code = p
			prepare(b, e, raw)
			p.Close()
		}
	})
	b.Run("warm-worker", func(b *testing.B) {
		e := New(Limits{})
		p := &sandbox.Pool{Options: sandbox.Options{Path: worker}}
		b.Cleanup(p.Close)
		e.Services.Code = p
		prepare(b, e, raw)
		// Each body differs by a comment: a check, not the memory of one.
		bodies := make([][]byte, b.N)
		for i := range bodies {
			bodies[i] = bytes.Replace(raw, []byte(`"code": "`), []byte(`"code": "// `+strconv.Itoa(i)+`\n`), -1)
		}
		b.ResetTimer()
		for i := range b.N {
			prepare(b, e, bodies[i])
		}
	})
}
