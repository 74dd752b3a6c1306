package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/internal/doccorpus"
	"github.com/runnerd/lambda-runner/engine/plancache"
	"github.com/runnerd/lambda-runner/protocol"
)

// The plan cache (plancache.go) must never change what a request gets:
// the same refusal with the same details, the same events, whether its
// document was compiled for it or found compiled.

// outcome is what preparing and running one body gave, comparable.
type outcome struct {
	err    string   // the refusal's details, "" when accepted
	events []string // the NDJSON lines, times dropped, sorted but the last
	// late is set when the run reached its deadline, or a node its
	// timeoutMs (the corpus has nodes of 5 ms): where it stopped depends
	// on the machine's load, not on the plan.
	late bool
}

// prepareOutcome prepares body on e and, when it is accepted and runnable
// here, runs it within a second.
func prepareOutcome(t *testing.T, e *Engine, body []byte, run bool) outcome {
	t.Helper()
	x, err := e.PrepareBody(body)
	if err != nil {
		var inv *protocol.Invalid
		if !errors.As(err, &inv) {
			t.Fatalf("PrepareBody error %T %v", err, err)
		}
		b, _ := json.Marshal(inv.Details)
		return outcome{err: string(b)}
	}
	if !run {
		x.discard()
		return outcome{}
	}
	var buf bytes.Buffer
	w := protocol.NewWriter(&buf, testExecutionID, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	x.Run(ctx, w)
	if ctx.Err() != nil || bytes.Contains(buf.Bytes(), []byte(`"code":"TIMEOUT"`)) {
		return outcome{late: true}
	}
	return outcome{events: normalizeEvents(t, buf.Bytes())}
}

// normalizeEvents drops what differs between two runs of one execution
// (times, durations) and sorts the lines before the terminal one, whose
// order concurrent nodes decide.
func normalizeEvents(t *testing.T, stream []byte) []string {
	t.Helper()
	var lines []string
	for _, line := range bytes.Split(bytes.TrimSpace(stream), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		delete(m, "at")
		delete(m, "durationMs")
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	if len(lines) > 1 {
		slices.Sort(lines[:len(lines)-1])
	}
	return lines
}

// callsOut matches a document with a node that calls a service: it is not
// run here.
var callsOut = regexp.MustCompile(`"type":\s*"(model|agent|tool|http|workflow)"`)

// TestPlanCacheAgrees: every document of the test corpus (the documents
// of every test and example, and mutations of a sample, valid and
// invalid) prepared, and run when accepted, on an engine without a plan
// cache and twice on one with it, the second time from its plan when one
// was kept: the same details, the same events.
func TestPlanCacheAgrees(t *testing.T) {
	corpus := doccorpus.Harvest(t, ".")
	for _, d := range doccorpus.FullNodes() {
		corpus[d] = []byte(d)
	}
	docs := sortedKeys(corpus)
	for i, k := range docs {
		if i%5 == 0 && len(k) < 2000 {
			for j, m := range doccorpus.Mutations([]byte(k)) {
				if j%9 == 0 {
					docs = append(docs, string(m))
				}
			}
		}
	}
	if testing.Short() {
		docs = docs[:len(docs)/4]
	}
	// One node at a time: which of two failing nodes ends an execution
	// is otherwise a race, cached or not.
	l := DefaultLimits()
	l.MaxConcurrency = 1
	cold := New(l)
	cold.plans = nil
	warm := New(l)
	limits := warm.Limits.WithDefaults()
	hits, unsteady, late := 0, 0, 0
	for _, doc := range docs {
		for _, tail := range []string{`,"trace":true`, `,"input":{"n":1,"name":"x"}`} {
			body := []byte(`{"version":1,"workflow":` + doc + tail + `}`)
			// Only the documents of kinds that call nothing outside run.
			run := !callsOut.MatchString(doc)
			want := prepareOutcome(t, cold, body, run)
			// A plan is kept on the second sighting of its document and
			// serves the third.
			first := prepareOutcome(t, warm, body, run)
			if again := prepareOutcome(t, warm, body, run); !again.late && !first.late && !reflect.DeepEqual(first, again) && !coldGives(t, cold, body, run, again) {
				t.Fatalf("%.300s: the second sighting gave %v, the first %v", body, again, first)
			}
			req, _ := protocol.DecodeRequest(body)
			kept := req != nil && warm.plans.Get(req.Workflow, planEnv{limits, false}.key()) != nil
			second := prepareOutcome(t, warm, body, run)
			if want.late || first.late || second.late {
				late++
				continue
			}
			if kept {
				hits++
				// A request refused for its own parts (its input) may
				// find its document's plan, kept from a request that
				// brought a valid input; a document refused never is.
				if strings.Contains(want.err, `"path":"workflow`) {
					t.Errorf("%.300s: a refused document was kept: %s", body, want.err)
				}
			}
			if differ := !reflect.DeepEqual(want, first) || !reflect.DeepEqual(want, second); differ && coldGives(t, cold, body, run, first, second) {
				// The engine itself gives this body other outcomes from
				// one run to the next (which of two failing nodes ends
				// the execution, which detail a covering one hides), and
				// these are among them.
				unsteady++
			} else if differ {
				t.Fatalf("%.300s (kept %v):\n cold   %v\n first  %v\n second %v", body, kept, want, first, second)
			}
		}
	}
	// A test that found nothing kept would prove nothing.
	if hits < 50 {
		t.Fatalf("only %d of %d documents were served from a plan", hits, 2*len(docs))
	}
	t.Logf("%d bodies, %d served from a plan, %d whose outcome varies without one, %d that ran out of time", 2*len(docs), hits, unsteady, late)
}

// coldGives reports whether preparing (and running) body cold gives each
// of outcomes in a few tries.
func coldGives(t *testing.T, cold *Engine, body []byte, run bool, outcomes ...outcome) bool {
	var seen []outcome
	for range 30 {
		seen = append(seen, prepareOutcome(t, cold, body, run))
	}
	for _, o := range outcomes {
		if !slices.ContainsFunc(seen, func(s outcome) bool { return reflect.DeepEqual(s, o) }) {
			return false
		}
	}
	return true
}

// TestPlanCacheConcurrent: one kept plan serves many executions at once,
// each with its own input, a map's iterations and a deep reference
// included.
func TestPlanCacheConcurrent(t *testing.T) {
	const wf = `{"input":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}},"nodes":[
		{"id":"a","type":"set","with":{"value":"${{ input.n }}"}},
		{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output * 2 }}"}},
		{"id":"m","type":"map","needs":["b"],"with":{"items":"${{ 1..3 }}","concurrency":3,
			"nodes":[{"id":"i","type":"set","with":{"value":"${{ item * nodes.b.output }}"}}],"output":"${{ nodes.i.output }}"}},
		{"id":"c","type":"set","needs":["m"],"with":{"value":"${{ sum(nodes.m.output) + len(nodes) }}"}}],
		"output":"${{ nodes.c.output }}"}`
	e := New(DefaultLimits())
	body := func(n int) []byte { return []byte(reqBody(wf, fmt.Sprintf(`{"n":%d}`, n))) }
	for range 2 { // kept on the second sighting
		if _, err := e.PrepareBody(body(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, n := e.plans.Bytes(); n != 1 {
		t.Fatalf("%d plans kept, want 1", n)
	}
	var wg sync.WaitGroup
	for k := range 32 {
		wg.Go(func() {
			last, err := prepareAndRun(e, body(k))
			if err != nil {
				t.Error(err)
				return
			}
			res, ok := last.(*protocol.Result)
			// b = 2k; m = [2k, 4k, 6k]; c = 12k + its 3 upstream nodes.
			if want := fmt.Sprint(12*k + 3); !ok || string(res.Output) != want {
				t.Errorf("n=%d: terminal %v, want output %s", k, describe(last), want)
			}
		})
	}
	wg.Wait()
}

// TestPlanCachePerRequest: a request served from a plan still has its own
// parts checked, as the same request served cold is: its input against
// the kept input schema, its permissions and policies, its runtime.
func TestPlanCachePerRequest(t *testing.T) {
	const wf = `{"input":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}},"nodes":[{"id":"a","type":"set","with":{"value":"${{ input.n }}"}}]}`
	tests := []struct {
		name, rest string
		path       string // of the detail the request is refused with
	}{
		{"input against the schema", `"input":{"n":"x"}`, "input.n"},
		{"input missing", `"input":{}`, "input"},
		{"malformed permissions", `"input":{"n":1},"permissions":[7]`, "permissions[0]"},
		{"malformed tool policy", `"input":{"n":1},"toolPolicies":[{"tool":"t","decision":"perhaps"}]`, "toolPolicies[0]"},
		{"malformed http policy", `"input":{"n":1},"runtime":{"http":{"policy":{"allowHosts":["https://x.example.com/"]}}}`, "runtime.http.policy"},
		{"malformed runtime.models", `"input":{"n":1},"runtime":{"models":[{"role":"r","provider":"watson","model":"m"}]}`, "runtime.models[0].provider"},
		// With child workflows the document is compiled again, with them.
		{"invalid child workflow", `"input":{"n":1},"runtime":{"workflows":[{"id":"c","nodes":[{"id":"x","type":"nope"}]}]}`, "runtime.workflows[0].nodes[0].type"},
	}
	e := New(DefaultLimits())
	cold := New(DefaultLimits())
	cold.plans = nil
	for range 2 { // kept on the second sighting
		if _, err := e.PrepareBody([]byte(reqBody(wf, `{"n":1}`))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"version":1,"workflow":` + wf + `,` + tt.rest + `}`)
			got := prepareOutcome(t, e, body, false)
			if want := prepareOutcome(t, cold, body, false); !reflect.DeepEqual(got, want) {
				t.Fatalf("from the plan %v, cold %v", got, want)
			}
			if !strings.Contains(got.err, `"path":"`+tt.path) {
				t.Fatalf("refused with %s, want a detail at %s", got.err, tt.path)
			}
		})
	}
	if _, n := e.plans.Bytes(); n != 1 {
		t.Fatalf("%d plans kept, want the one", n)
	}
}

// TestPlanCacheImpure: a document whose compile reads the request (what
// its runtime declares, the secrets it names, its child workflows) or runs
// a kind the engine does not know is never kept: the same document
// accepted with one request's runtime is refused with another's, as cold.
func TestPlanCacheImpure(t *testing.T) {
	tests := []struct {
		name     string
		wf       string
		accepted string // the runtime it is accepted with
		refused  string // and refused with
	}{
		{"http secret",
			`{"nodes":[{"id":"h","type":"http","with":{"url":"https://api.example.com","headers":{"a":"${{ secrets.tok }}"}}}]}`,
			`"runtime":{"http":{"policy":{"allowHosts":["api.example.com"]},"secrets":{"tok":{"value":"v","hosts":["api.example.com"]}}}}`,
			`"runtime":{"http":{"policy":{"allowHosts":["api.example.com"]}}}`},
		{"http host against the policy",
			`{"nodes":[{"id":"h","type":"http","with":{"url":"https://api.example.com"}}]}`,
			`"runtime":{"http":{"policy":{"allowHosts":["api.example.com"]}}}`,
			`"runtime":{"http":{"policy":{"allowHosts":["other.example.com"]}}}`},
		{"model role",
			`{"nodes":[{"id":"m","type":"model","with":{"role":"writer","prompt":"p"}}]}`,
			`"runtime":{"models":[{"role":"writer","provider":"openai","model":"m"}]}`,
			`"runtime":{"models":[{"role":"reader","provider":"openai","model":"m"}]}`},
		{"agent toolset",
			`{"nodes":[{"id":"a","type":"agent","with":{"role":"writer","prompt":"p","toolsets":["math"]}}]}`,
			`"runtime":{"models":[{"role":"writer","provider":"openai","model":"m"}],"toolsets":[{"name":"math","url":"http://127.0.0.1:1/mcp"}]}`,
			`"runtime":{"models":[{"role":"writer","provider":"openai","model":"m"}]}`},
		{"tool toolset",
			`{"nodes":[{"id":"t","type":"tool","with":{"toolset":"math","tool":"add"}}]}`,
			`"runtime":{"toolsets":[{"name":"math","url":"http://127.0.0.1:1/mcp"}]}`,
			`"runtime":{}`},
		{"child workflow",
			`{"nodes":[{"id":"w","type":"workflow","with":{"workflow":"child"}}]}`,
			`"runtime":{"workflows":[{"id":"child","nodes":[{"id":"x","type":"set"}]}]}`,
			`"runtime":{}`},
		{"child workflow named by an expression",
			`{"input":{"type":"object"},"nodes":[{"id":"w","type":"workflow","with":{"workflow":"${{ input.w }}"}},{"id":"s","type":"set","needs":["w"],"with":{"value":"${{ nodes.w.output }}"}}]}`,
			`"input":{"w":"child"},"runtime":{"workflows":[{"id":"child","nodes":[{"id":"x","type":"set"}]}]}`,
			`"input":{"w":"child"},"runtime":{"workflows":[{"id":"child","nodes":[{"id":"x","type":"nope"}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(DefaultLimits())
			cold := New(DefaultLimits())
			cold.plans = nil
			ok := []byte(`{"version":1,"workflow":` + tt.wf + `,` + tt.accepted + `}`)
			bad := []byte(`{"version":1,"workflow":` + tt.wf + `,` + tt.refused + `}`)
			for range 2 {
				if got := prepareOutcome(t, e, ok, false); got.err != "" {
					t.Fatalf("refused with the runtime it needs: %s", got.err)
				}
			}
			got := prepareOutcome(t, e, bad, false)
			if got.err == "" {
				t.Fatal("accepted with a runtime that lacks what it needs")
			}
			if want := prepareOutcome(t, cold, bad, false); !reflect.DeepEqual(got, want) {
				t.Fatalf("after the accepted request %v, cold %v", got, want)
			}
			if _, n := e.plans.Bytes(); n != 0 {
				t.Fatalf("%d plans kept", n)
			}
		})
	}
}

// countingKind is a kind registered from outside the engine: its Prepare
// may read anything, so its documents are compiled every time.
type countingKind struct{ n *int }

func (k countingKind) Prepare(c *Compiler) Step {
	*k.n++
	return StepFunc(func(context.Context, *Call) (any, error) { return nil, nil })
}

func TestPlanCacheRegisteredKind(t *testing.T) {
	n := 0
	e := New(DefaultLimits())
	const wf = `{"nodes":[{"id":"a","type":"set"}]}`
	for range 2 { // kept on the second sighting
		prepareOutcome(t, e, []byte(reqBody(wf, "")), false)
	}
	if _, kept := e.plans.Bytes(); kept != 1 {
		t.Fatalf("%d plans kept, want 1", kept)
	}
	// Registering drops the plans compiled with the type it replaces.
	e.Register("set", countingKind{&n})
	for range 3 {
		if got := prepareOutcome(t, e, []byte(reqBody(wf, "")), false); got.err != "" {
			t.Fatal(got.err)
		}
	}
	if _, kept := e.plans.Bytes(); n != 3 || kept != 0 {
		t.Fatalf("Prepare of the registered kind ran %d times for 3 requests, %d plans kept", n, kept)
	}
}

// TestPlanCacheLimits: a plan is kept per limits: an engine copy with
// other limits (ServeBatch's) compiles the document under its own.
func TestPlanCacheLimits(t *testing.T) {
	e := New(DefaultLimits())
	wf := `{"nodes":[` + strings.Repeat(`{"id":"a","type":"set"},`, 0) + `{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a"]}]}`
	if got := prepareOutcome(t, e, []byte(reqBody(wf, "")), false); got.err != "" {
		t.Fatal(got.err)
	}
	small := *e
	small.Limits.MaxNodes = 1
	got := prepareOutcome(t, &small, []byte(reqBody(wf, "")), false)
	if !strings.Contains(got.err, "maxNodes") {
		t.Fatalf("an engine of maxNodes 1 got %v", got)
	}
}

// planShapes are documents of n nodes made unique by salt: a chain, a
// fan-out, and maps of a chain each.
var planShapes = []struct {
	name string
	doc  func(n, salt int) string
}{
	{"chain", func(n, salt int) string {
		var b strings.Builder
		b.WriteString(`{"nodes":[{"id":"n0","type":"set","with":{"value":0}}`)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["n%d"],"with":{"value":"${{ nodes.n%d.output + %d }}"}}`, i, i-1, i-1, salt)
		}
		fmt.Fprintf(&b, `],"output":"${{ nodes.n%d.output }}"}`, n-1)
		return b.String()
	}},
	{"fanout", func(n, salt int) string {
		var b strings.Builder
		b.WriteString(`{"nodes":[{"id":"root","type":"set","with":{"value":{"k":"v"}}}`)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,{"id":"n%d","type":"set","needs":["root"],"with":{"value":"${{ nodes.root.output.k + '%d' }}"}}`, i, salt)
		}
		b.WriteString(`]}`)
		return b.String()
	}},
	{"bare nodes", func(n, salt int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"w%d","nodes":[{"id":"a","type":"set"}`, salt)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,{"id":"_%x","type":"set","needs":["a"]}`, i)
		}
		b.WriteString(`]}`)
		return b.String()
	}},
	{"short expressions", func(n, salt int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"w%d","nodes":[{"id":"a","type":"set"}`, salt)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,{"id":"_%x","type":"set","needs":["a"],"when":"${{%d>1}}","with":{"value":"${{%d}}"}}`, i, i, salt)
		}
		b.WriteString(`]}`)
		return b.String()
	}},
	// What an author would write to make the heap grow fastest per byte.
	{"bare nodes without needs", func(n, salt int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"w%d","nodes":[{"id":"a","type":"set"}`, salt)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,{"id":"_%x","type":"set"}`, i)
		}
		b.WriteString(`]}`)
		return b.String()
	}},
	{"small objects", func(n, salt int) string {
		return fmt.Sprintf(`{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":[%s{}]}}]}`, salt, strings.Repeat(`{"a":1},`, 5*n))
	}},
	{"empty objects", func(n, salt int) string {
		return fmt.Sprintf(`{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":[%s{}]}}]}`, salt, strings.Repeat(`{},`, 5*n))
	}},
	{"empty arrays", func(n, salt int) string {
		return fmt.Sprintf(`{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":[%s[]]}}]}`, salt, strings.Repeat(`[],`, 20*n))
	}},
	{"numbers", func(n, salt int) string {
		return fmt.Sprintf(`{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":[%s1]}}]}`, salt, strings.Repeat(`1,`, 20*n))
	}},
	{"members", func(n, salt int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":{"a":1`, salt)
		for i := range 20 * n {
			fmt.Fprintf(&b, `,"k%x":1`, i)
		}
		b.WriteString(`}}}]}`)
		return b.String()
	}},
	{"templated objects", func(n, salt int) string {
		return fmt.Sprintf(`{"id":"w%d","nodes":[{"id":"a","type":"set","with":{"value":[%s{}]}}]}`, salt, strings.Repeat(`{"a":"${{1}}"},`, 5*n))
	}},
	{"maps", func(n, salt int) string {
		var b strings.Builder
		b.WriteString(`{"nodes":[`)
		for i := range n / 10 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"m%d","type":"map","with":{"items":[1,2],"nodes":[{"id":"a","type":"set","with":{"value":"${{ item + %d }}"}}`, i, salt)
			for j := 1; j < 9; j++ {
				fmt.Fprintf(&b, `,{"id":"a%d","type":"set","needs":["%s"],"with":{"value":"${{ nodes.%s.output * %d }}"}}`, j, prevID(j), prevID(j), salt)
			}
			b.WriteString(`],"output":"${{ nodes.a8.output }}"}}`)
		}
		b.WriteString(`]}`)
		return b.String()
	}},
}

func prevID(j int) string {
	if j == 1 {
		return "a"
	}
	return fmt.Sprintf("a%d", j-1)
}

// liveHeap returns the live heap after a collection.
// prepareAndRun prepares body and runs it, returning its last event; safe
// to call from several goroutines.
func prepareAndRun(e *Engine, body []byte) (protocol.Event, error) {
	x, err := e.PrepareBody(body)
	if err != nil {
		return nil, err
	}
	s := &recSink{}
	x.Run(context.Background(), s)
	events := s.all()
	return events[len(events)-1], nil
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestPlanCacheEstimate: what a kept plan holds of the heap, per byte of
// its document, is within planBytesPerTextByte, the estimate the cache's
// bound counts (its text included). The expression caches of engine/lang,
// bounded on their own, are filled first, so that what grows is the plans.
func TestPlanCacheEstimate(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector changes what the heap holds")
	}
	for _, sh := range planShapes {
		t.Run(sh.name, func(t *testing.T) {
			prime := New(DefaultLimits())
			prime.plans = nil
			for salt := range 40 {
				prepareOutcome(t, prime, []byte(reqBody(sh.doc(1000, 1_000_000+salt), "")), false)
			}
			e := New(DefaultLimits())
			bodies := make([][]byte, 8)
			for i := range bodies {
				bodies[i] = []byte(reqBody(sh.doc(1000, i), ""))
			}
			before := liveHeap()
			text := 0
			for _, b := range bodies {
				for range 2 { // kept on the second sighting
					if got := prepareOutcome(t, e, b, false); got.err != "" {
						t.Fatal(got.err)
					}
				}
				text += len(b)
			}
			bodies = nil
			after := liveHeap()
			used, n := e.plans.Bytes()
			if n != 8 {
				t.Fatalf("%d plans kept, want 8", n)
			}
			perByte := (float64(after) - float64(before)) / float64(text)
			t.Logf("%s: %d bytes of text, heap +%d (%.1f per byte), estimated %d", sh.name, text, after-before, perByte, used)
			if int64(after-before) > used {
				t.Errorf("the plans hold %d bytes, over the estimate %d", after-before, used)
			}
			runtime.KeepAlive(e)
		})
	}
}

// TestPlanCacheBound: an author sending ever new documents, of every
// shape, only evicts: what the cache counts never passes its bound, nor
// does the heap it holds, and a document over half the bound is never
// kept.
func TestPlanCacheBound(t *testing.T) {
	l := DefaultLimits()
	l.MemoryMB = 32 // a bound of 4 MB
	e := New(l)
	bound := plancache.Bound(e.Limits.WithDefaults().MemoryMB)
	rounds := 60
	if raceDetector {
		rounds = 15
	}
	// The expression caches of engine/lang, bounded on their own, filled
	// first: what grows after is the plans.
	prime := New(l)
	prime.plans = nil
	for i := range rounds {
		for _, sh := range planShapes {
			prepareOutcome(t, prime, []byte(reqBody(sh.doc(100, 1_000_000+i), "")), false)
		}
	}
	base := liveHeap()
	for i := range rounds {
		for _, sh := range planShapes {
			for range 2 { // kept on the second sighting
				if got := prepareOutcome(t, e, []byte(reqBody(sh.doc(100, i), "")), false); got.err != "" {
					t.Fatalf("%s: %s", sh.name, got.err)
				}
			}
			if used, _ := e.plans.Bytes(); used > bound {
				t.Fatalf("the cache counts %d bytes, over its bound %d", used, bound)
			}
		}
	}
	used, n := e.plans.Bytes()
	if n == 0 || used < bound/2 {
		t.Fatalf("%d plans, %d bytes kept: the test did not fill the cache", n, used)
	}
	held := int64(liveHeap()) - int64(base)
	t.Logf("%d plans kept, counted %d bytes, the heap grew by %d; bound %d", n, used, held, bound)
	if !raceDetector && held > bound {
		t.Errorf("the heap grew by %d bytes, over the cache's bound %d", held, bound)
	}
	// One document estimated over half the bound is compiled, not kept.
	big := []byte(reqBody(planShapes[0].doc(4000, -1), ""))
	if plancache.Size(big) <= bound/plancache.MaxShare {
		t.Fatalf("the big document is estimated at %d, within the share %d", plancache.Size(big), bound/plancache.MaxShare)
	}
	for range 2 {
		if got := prepareOutcome(t, e, big, false); got.err != "" {
			t.Fatal(got.err)
		}
	}
	if _, after := e.plans.Bytes(); after > n {
		t.Fatalf("%d plans kept after the big document, %d before", after, n)
	}
	runtime.KeepAlive(e)
}

// TestPlanCacheChurn: requests at once over more documents than the cache
// holds, so that lookups, insertions and evictions interleave (run it
// under -race); every execution still gives its own document's output.
func TestPlanCacheChurn(t *testing.T) {
	l := DefaultLimits()
	l.MemoryMB = 4 // a bound of 512 KiB: a few of these documents
	e := New(l)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				k := (g + i) % 12
				last, err := prepareAndRun(e, []byte(reqBody(planShapes[0].doc(50, k), "")))
				if err != nil {
					t.Error(err)
					return
				}
				// n49 = 49 additions of k to n0's 0.
				if res, ok := last.(*protocol.Result); !ok || string(res.Output) != fmt.Sprint(49*k) {
					t.Errorf("document %d: %s", k, describe(last))
				}
			}
		})
	}
	wg.Wait()
	if used, _ := e.plans.Bytes(); used > plancache.Bound(e.Limits.WithDefaults().MemoryMB) {
		t.Fatalf("%d bytes kept, over the bound", used)
	}
}

// TestPlanCacheSeenOnce: a document sent once is compiled and not kept,
// so that a stream of one-off documents evicts nothing; sent again, it is.
func TestPlanCacheSeenOnce(t *testing.T) {
	e := New(DefaultLimits())
	for i := range 50 {
		prepareOutcome(t, e, []byte(reqBody(planShapes[0].doc(10, i), "")), false)
	}
	if used, n := e.plans.Bytes(); n != 0 || used != 0 {
		t.Fatalf("%d plans (%d bytes) kept of documents sent once", n, used)
	}
	prepareOutcome(t, e, []byte(reqBody(planShapes[0].doc(10, 7), "")), false)
	if _, n := e.plans.Bytes(); n != 1 {
		t.Fatalf("%d plans kept of a document sent twice, want 1", n)
	}
}
