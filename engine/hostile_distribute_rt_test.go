package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// streamText encodes every event of s, as the client would read them.
func streamText(s *recSink) string {
	var b strings.Builder
	for _, e := range s.all() {
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// storeServer records the Authorization header of each /store request and
// answers /last with the last one recorded: a bound host that returns, in a
// later reply, a credential it was sent earlier.
func storeServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	last := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/store":
			last = r.Header.Get("Authorization")
			fmt.Fprint(w, `{"ok":true}`)
		default:
			b, _ := json.Marshal(map[string]string{"h": last})
			w.Write(b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRTDistributeLearnedRedaction: a value learned by the redactor in one
// invocation (a Basic credential built from a secret) was unknown to the
// other: what the bound host returned of it later passed unredacted into the
// stream, where the in-process map redacts it. Now the parent sends what it
// learned to its children and the children report what they learn (see
// engine/secrets/share.go): distributed or not, the result is redacted alike.
func TestRTDistributeLearnedRedaction(t *testing.T) {
	const secret = "rt-s3cret-value-77"
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + secret))
	cases := []struct{ name, wf string }{{
		name: "learned in a child, read back in the parent",
		wf: `{"nodes":[
			{"id":"each","type":"map","with":{"items":[1,2],DIST"nodes":[
				{"id":"send","type":"http","with":{"url":"SRV/store","headers":{"Authorization":"Basic ${{ toBase64('user:' + secrets.k) }}"}}}]}},
			{"id":"read","type":"http","needs":["each"],"with":{"url":"SRV/last"}}],
			"output":"${{ nodes.read.output.body.h }}"}`,
	}, {
		name: "learned in the parent, read back in a child",
		wf: `{"nodes":[
			{"id":"send","type":"http","with":{"url":"SRV/store","headers":{"Authorization":"Basic ${{ toBase64('user:' + secrets.k) }}"}}},
			{"id":"each","type":"map","needs":["send"],"with":{"items":[1],DIST"nodes":[
				{"id":"read","type":"http","with":{"url":"SRV/last"}}],
				"output":"${{ split(nodes.read.output.body.h, '') }}"}}],
			"output":"${{ join(nodes.each.output[0], '') + ' / ' + join(nodes.each.output[0], '-') }}"}`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := storeServer(t)
			body := func(dist string) string {
				wf := strings.ReplaceAll(strings.Replace(tc.wf, "DIST", dist, 1), "SRV", srv.URL)
				return `{"version":1,"workflow":` + wf + `,"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"k":{"value":"` + secret + `","hosts":["127.0.0.1"]}}}},"permissions":["http:127.0.0.1"],"trace":true}`
			}
			local, _ := wtEngine(nil)
			in, _ := fanRun(t, nil, local, body(""))
			parent, fo := fanEngines(nil)
			dist, _ := fanRun(t, nil, parent, body(`"distribute":{"batchSize":1,"invocations":2},`))
			if fo.calls.Load() == 0 {
				t.Fatal("no child invocation")
			}
			sIn, sDist := streamText(in), streamText(dist)
			// the second case spells the credential out with "-" between its characters
			flatIn, flatDist := strings.ReplaceAll(sIn, "-", ""), strings.ReplaceAll(sDist, "-", "")
			if strings.Contains(flatIn, basic) {
				t.Errorf("in process: the credential reached the stream")
			}
			if !strings.Contains(sIn, `"status":"completed"`) || !strings.Contains(sDist, `"status":"completed"`) {
				t.Fatalf("did not complete:\n%s\n%s", sIn, sDist)
			}
			if strings.Contains(flatDist, basic) {
				i := strings.Index(flatDist, basic)
				t.Errorf("distributed: the Basic credential of user:secret (%s) reached the parent's stream: ...%s...", basic, flatDist[max(0, i-80):min(len(flatDist), i+len(basic)+20)])
			}
			// Redacted alike: the execution's redactor knows the value
			// wherever it was learned.
			outIn, outDist := rtOutput(rtLastLine(sIn)), rtOutput(rtLastLine(sDist))
			if outIn != outDist {
				t.Errorf("the outputs differ: in process %s, distributed %s", outIn, outDist)
			}
			t.Logf("in-process result: %s", rtLastLine(sIn))
			t.Logf("distributed result: %s", rtLastLine(sDist))
		})
	}
}

// rtOutput is the output of a terminal event's line.
func rtOutput(line string) string {
	var r struct{ Output json.RawMessage }
	_ = json.Unmarshal([]byte(line), &r)
	return string(r.Output)
}

func rtLastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}

var _ = protocol.TypeNodeStarted

// rtRepro skips a reproducer of a finding not fixed on this branch unless
// RT_REPRO=1: the suite stays green, the reproducer stays runnable.
func rtRepro(t *testing.T) {
	t.Helper()
	if os.Getenv("RT_REPRO") != "1" {
		t.Skip("reproducer of an open finding: RT_REPRO=1 runs it")
	}
}

// replayFanOut answers every invocation with the same recorded stream: what
// a real child (ServeBatch) wrote for a batch of the same size. The parent's
// memory is then measured alone, without the children's.
type replayFanOut struct {
	stream []byte
	calls  atomic.Int64
	gate   chan struct{} // when set, each stream starts once it is closed
}

func (p *replayFanOut) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	p.calls.Add(1)
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return io.NopCloser(bytes.NewReader(p.stream)), nil
}

// recordBatch runs the first batch the parent would send for body in a real
// child engine and returns what it wrote.
func recordBatch(t *testing.T, mod func(*Limits), body string) []byte {
	t.Helper()
	parent, fo := fanEngines(mod)
	var first []byte
	var once sync.Once
	parent.Services.FanOut = fanOutFunc(func(ctx context.Context, payload []byte) (io.ReadCloser, error) {
		once.Do(func() {
			var buf bytes.Buffer
			if err := fo.child.ServeBatch(ctx, payload, &buf); err != nil {
				t.Errorf("ServeBatch: %v", err)
			}
			first = buf.Bytes()
		})
		return nil, errors.New("recorded")
	})
	fanRun(t, nil, parent, body)
	return first
}

type fanOutFunc func(ctx context.Context, payload []byte) (io.ReadCloser, error)

func (f fanOutFunc) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	return f(ctx, payload)
}

// TestRTDistributeParentMemory: each child's end line carries outputs up to
// the child's own memory budget; the parent reads every line whole, copies
// its outputs and decodes them before charging anything, for every batch at
// once. The parent's heap grows many times its memory budget before the
// map fails MEMORY_BUDGET_EXCEEDED.
func TestRTDistributeParentMemory(t *testing.T) {
	for _, tc := range []struct {
		budget            int64
		perBatch, batches int
		inv               int
	}{
		{32 << 20, 7, 2, 1},
		{32 << 20, 7, 8, 8},
		{128 << 20, 31, 4, 4}, // the defaults of a 512 MB function
	} {
		t.Run(fmt.Sprintf("budget %d MiB, %d batches of %d, %d at once", tc.budget>>20, tc.batches, tc.perBatch, tc.inv), func(t *testing.T) {
			mod := func(l *Limits) { l.MemoryBudget = tc.budget } // outputs 4 MiB
			wf := fmt.Sprintf(`{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..%d }}","distribute":{"batchSize":%d,"invocations":%d},"nodes":[
		{"id":"big","type":"set","with":{"value":"${{ repeat('%s', 4000) }}"}}],"output":"${{ nodes.big.output }}"}}]}`, tc.perBatch*tc.batches, tc.perBatch, tc.inv, strings.Repeat("x", 1000))
			body := `{"version":1,"workflow":` + wf + `}`
			rec := recordBatch(t, mod, body)
			t.Logf("one child's stream: %d bytes (%d lines)", len(rec), bytes.Count(rec, []byte("\n")))
			// The collector at work after every 10% of growth, so that the
			// heap stays near what is live (as GOMEMLIMIT keeps it under
			// RUNNER_MEMORY_MB), and the least of three peaks: what the
			// collector had not yet reclaimed, more on a loaded machine
			// or beside other tests of the package, is not the parent's.
			defer debug.SetGCPercent(debug.SetGCPercent(10))
			var (
				s    *recSink
				rp   *replayFanOut
				el   time.Duration
				peak int64 = math.MaxInt64
			)
			for range 3 {
				parent, _ := fanEngines(mod)
				rp = &replayFanOut{stream: rec, gate: make(chan struct{})}
				parent.Services.FanOut = rp
				go func() { time.Sleep(50 * time.Millisecond); close(rp.gate) }()
				start := time.Now()
				peak = min(peak, heapPeak(func() { s, _ = fanRun(t, nil, parent, body) }))
				el = time.Since(start)
			}
			term := rtLastLine(streamText(s))
			t.Logf("%d invocations; parent heap peak +%d MiB (least of 3) in %v; %s", rp.calls.Load(), peak>>20, el.Round(time.Millisecond), term)
			local, _ := wtEngine(mod)
			inBody := strings.Replace(body, fmt.Sprintf(`"distribute":{"batchSize":%d,"invocations":%d},`, tc.perBatch, tc.inv), "", 1)
			var ls *recSink
			lpeak := heapPeak(func() { ls, _ = fanRun(t, nil, local, inBody) })
			t.Logf("in process: heap peak +%d MiB; %s", lpeak>>20, rtLastLine(streamText(ls)))
			if peak > 4*tc.budget {
				t.Errorf("the parent's heap grew %d MiB, %.1fx its memory budget of %d MiB", peak>>20, float64(peak)/float64(tc.budget), tc.budget>>20)
			}
		})
	}
}

// countFanOut counts the invocations of inner, and how many are open at
// once (from Invoke to the stream's Close).
type countFanOut struct {
	inner      FanOut
	calls      atomic.Int64
	open, peak atomic.Int64
}

func (c *countFanOut) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	c.calls.Add(1)
	if n := c.open.Add(1); n > c.peak.Load() {
		c.peak.Store(n) // racy max, good enough for a lower bound
	}
	rc, err := c.inner.Invoke(ctx, payload)
	if err != nil {
		c.open.Add(-1)
		return nil, err
	}
	return &countClose{ReadCloser: rc, c: c}, nil
}

type countClose struct {
	io.ReadCloser
	c    *countFanOut
	once sync.Once
}

func (cc *countClose) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.ReadCloser.Close()
}

// TestRTDistributeInvocationsAtOnce: maxFanOutInvocations bounds one map,
// not the execution: three distributed maps side by side hold three times
// as many child invocations open (docs/deploy.md sizes reserved concurrency
// as executions × (1 + MaxFanOutInvocations)).
func TestRTDistributeInvocationsAtOnce(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, `{}`)
	}))
	defer slow.Close()
	const maps = 3
	var nodes []string
	for m := range maps {
		nodes = append(nodes, fmt.Sprintf(`{"id":"m%d","type":"map","with":{"items":"${{ 1..8 }}","distribute":{"batchSize":1,"invocations":8},"nodes":[
			{"id":"get","type":"http","with":{"url":"%s/x"}}]}}`, m, slow.URL))
	}
	body := `{"version":1,"workflow":{"nodes":[` + strings.Join(nodes, ",") + `]},"runtime":{"http":{"policy":{"allowPrivateNetwork":true}}},"permissions":["http:127.0.0.1"]}`
	parent, fo := fanEngines(nil) // MaxFanOutInvocations 8
	cf := &countFanOut{inner: fo}
	parent.Services.FanOut = cf
	start := time.Now()
	s, _ := fanRun(t, nil, parent, body)
	t.Logf("%d invocations, %d open at once at the peak, in %v; %s", cf.calls.Load(), cf.peak.Load(), time.Since(start).Round(time.Millisecond), rtLastLine(streamText(s)))
	if p := cf.peak.Load(); p > 8 {
		t.Errorf("%d child invocations open at once, over maxFanOutInvocations (8)", p)
	}
}

// TestRTDistributeInvocationsUncounted (F6, fixed): iterations whose nodes
// are all skipped counted nothing against maxNodes, and a map's retry
// re-runs every batch: with maxNodes 40 the execution made 5,000
// invocations. Every item sent now counts at least one, so the invocations
// stay within maxNodes and the execution fails LIMIT_EXCEEDED naming it.
func TestRTDistributeInvocationsUncounted(t *testing.T) {
	const maps, items, attempts = 5, 200, 5
	var nodes []string
	for m := range maps {
		nodes = append(nodes, fmt.Sprintf(`{"id":"m%d","type":"map","onError":"continue","retry":{"maxAttempts":%d,"backoffMs":0},"with":{"items":"${{ 1..%d }}","distribute":{"batchSize":1,"invocations":8},"nodes":[
			{"id":"n","type":"fail","when":"index == %d","with":{"code":"AGAIN"}}]}}`, m, attempts, items, items-1))
	}
	body := `{"version":1,"workflow":{"nodes":[` + strings.Join(nodes, ",") + `]}}`
	parent, fo := fanEngines(func(l *Limits) { l.MaxNodes = 40 })
	cf := &countFanOut{inner: fo}
	parent.Services.FanOut = cf
	start := time.Now()
	s, sum := fanRun(t, nil, parent, body)
	t.Logf("maxNodes 40: %d child invocations in %v; %s", cf.calls.Load(), time.Since(start).Round(time.Millisecond), rtLastLine(streamText(s)))
	if n := cf.calls.Load(); n > 40 {
		t.Errorf("%d child invocations with maxNodes 40", n)
	}
	if !strings.Contains(streamText(s), `"code":"LIMIT_EXCEEDED","message":"execution ran more than maxNodes (40) nodes`) {
		t.Errorf("no map failed LIMIT_EXCEEDED naming maxNodes:\n%s", streamText(s))
	}
	if sum.Nodes > 40 {
		t.Errorf("the summary counts %d nodes with maxNodes 40", sum.Nodes)
	}
}

// TestRTDistributeFailuresNamed compares how a map fails in process and
// distributed: the terminal error's message and node.
func TestRTDistributeFailuresNamed(t *testing.T) {
	rtRepro(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
		io.WriteString(w, `{}`)
	}))
	defer slow.Close()
	rt := `,"runtime":{"http":{"policy":{"allowPrivateNetwork":true}}},"permissions":["http:127.0.0.1"]`
	cases := []struct {
		name, wf, extra string
		mod             func(*Limits)
	}{
		{name: "map timeoutMs", wf: `{"nodes":[{"id":"each","type":"map","timeoutMs":300,"with":{"items":[1,2],DIST"nodes":[
			{"id":"get","type":"http","with":{"url":"` + slow.URL + `/x"}}]}}]}`, extra: rt},
		{name: "maxNodes inside the iterations", wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..30 }}","concurrency":1,DIST"nodes":[
			{"id":"a","type":"set","with":{"value":1}}]}}]}`, mod: func(l *Limits) { l.MaxNodes = 10 }},
		{name: "output template fails", wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2,3],DIST"nodes":[
			{"id":"a","type":"set","with":{"value":1}}],"output":"${{ index == 2 ? fromJSON('x') : 1 }}"}}]}`},
		{name: "an item JSON cannot hold", wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ [1, 0.0/0.0 ?? 1] }}",DIST"nodes":[
			{"id":"a","type":"set","with":{"value":"${{ item }}"}}]}}]}`},
		{name: "memory budget in the children", wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..12 }}",DIST"nodes":[
			{"id":"big","type":"set","with":{"value":"${{ repeat('` + strings.Repeat("y", 1000) + `', 3000) }}"}}]}}]}`, mod: func(l *Limits) { l.MemoryBudget = 16 << 20 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := func(dist string) string {
				return `{"version":1,"workflow":` + strings.Replace(tc.wf, "DIST", dist, 1) + tc.extra + `}`
			}
			local, _ := wtEngine(tc.mod)
			in, _ := fanRun(t, nil, local, body(""))
			parent, fo := fanEngines(tc.mod)
			began := time.Now()
			dist, _ := fanRun(t, nil, parent, body(`"distribute":{"batchSize":1,"invocations":4},`))
			took := time.Since(began)
			a, b := rtLastLine(streamText(in)), rtLastLine(streamText(dist))
			t.Logf("%d invocations, %v\n  in process:  %s\n  distributed: %s", fo.calls.Load(), took.Round(time.Millisecond), a, b)
			if a != b {
				t.Errorf("the terminal events differ")
			}
		})
	}
}

// TestRTDistributeMapTimeout: a map's timeoutMs reaches the children as the
// execution's deadline: the map fails DEADLINE_EXCEEDED instead of TIMEOUT,
// and with onError "continue" the execution does not go on as in process.
func TestRTDistributeMapTimeout(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
		io.WriteString(w, `{}`)
	}))
	defer slow.Close()
	wf := `{"nodes":[{"id":"each","type":"map","timeoutMs":300,"onError":"continue","with":{"items":[1,2],DIST"nodes":[
			{"id":"get","type":"http","with":{"url":"` + slow.URL + `/x"}}]}},
		{"id":"after","type":"set","needs":["each"],"when":"true","with":{"value":"${{ nodes.each }}"}}],"output":"${{ nodes.after.output }}"}`
	body := func(dist string) string {
		return `{"version":1,"workflow":` + strings.Replace(wf, "DIST", dist, 1) + `,"runtime":{"http":{"policy":{"allowPrivateNetwork":true}}},"permissions":["http:127.0.0.1"]}`
	}
	local, _ := wtEngine(nil)
	in, _ := fanRun(t, nil, local, body(""))
	// The child runs under a context of its own, as under Lambda (the
	// pipe harness would hand it the parent's, with the map's deadline as
	// the execution's).
	parent, fo := fanEngines(nil)
	lf := &lambdaFanOut{child: fo.child}
	parent.Services.FanOut = lf
	dist, _ := fanRun(t, nil, parent, body(`"distribute":{"batchSize":1,"invocations":4},`))
	lf.wg.Wait()
	a, b := rtLastLine(streamText(in)), rtLastLine(streamText(dist))
	t.Logf("\n  in process:  %s\n  distributed: %s", a, b)
	outputOf := func(line string) string {
		var r struct{ Output json.RawMessage }
		_ = json.Unmarshal([]byte(line), &r)
		return string(r.Output)
	}
	if outputOf(a) != outputOf(b) {
		t.Errorf("the map's state differs: in process %s, distributed %s", outputOf(a), outputOf(b))
	}
}

// lambdaFanOut runs each batch as Lambda runs an invocation: under a
// context of its own (the parent's cancellation does not reach it; only
// the deadline in the event does), its writes never failing (Lambda, and
// the repository's own emulator front in functions/runner/rie_fanout_test.go,
// run the invocation to its end whatever the caller does); the parent reads
// what has been written so far.
type lambdaFanOut struct {
	child   *Engine
	calls   atomic.Int64
	started atomic.Int64 // node.started lines the children wrote
	wg      sync.WaitGroup
}

type unboundedPipe struct {
	mu   sync.Mutex
	cond sync.Cond
	buf  []byte
	done bool
}

func (p *unboundedPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.buf = append(p.buf, b...)
	p.cond.Broadcast()
	p.mu.Unlock()
	return len(b), nil
}

func (p *unboundedPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.done {
		p.cond.Wait()
	}
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

func (p *unboundedPipe) Close() error { return nil }

func (l *lambdaFanOut) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	l.calls.Add(1)
	p := &unboundedPipe{}
	p.cond.L = &p.mu
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		cw := &countingWriter{w: p, n: &l.started}
		_ = l.child.ServeBatch(context.Background(), payload, cw)
		p.mu.Lock()
		p.done = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	return p, nil
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.n.Add(int64(bytes.Count(b, []byte(`"type":"node.started"`))))
	return c.w.Write(b)
}

// TestRTDistributeMaxNodesInChildren (F5, fixed): every child started
// counting from the parent's count when it was sent and could run up to
// maxNodes itself (728 nodes started with maxNodes 100); the parent stopped
// at maxNodes of the events it had read, but the children, which Lambda
// runs to their end, had run their nodes by then. Each batch now gets a
// share of what remains, which its child cannot pass.
func TestRTDistributeMaxNodesInChildren(t *testing.T) {
	const maxNodes = 100
	parent, fo := fanEngines(func(l *Limits) { l.MaxNodes = maxNodes })
	lf := &lambdaFanOut{child: fo.child}
	parent.Services.FanOut = lf
	body := `{"version":1,"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..8 }}","distribute":{"batchSize":1,"invocations":8},"nodes":[
		{"id":"inner","type":"map","with":{"items":"${{ 1..90 }}","nodes":[{"id":"a","type":"set","with":{"value":1}}]}}]}}]}}`
	s, _ := fanRun(t, nil, parent, body)
	lf.wg.Wait()
	t.Logf("maxNodes %d: %d invocations; the children started %d nodes; %s", maxNodes, lf.calls.Load(), lf.started.Load(), rtLastLine(streamText(s)))
	if n := lf.started.Load(); n+1 > maxNodes { // the map itself, in the parent
		t.Errorf("the children ran %d nodes, maxNodes is %d", n, maxNodes)
	}
	f := s.failure(t)
	// as in process: "node each[2].inner[26].a failed: LIMIT_EXCEEDED: execution ran more than maxNodes (100) nodes..."
	if !strings.Contains(f.Error.Message, fmt.Sprintf("LIMIT_EXCEEDED: execution ran more than maxNodes (%d) nodes", maxNodes)) {
		t.Errorf("terminal error %+v, want LIMIT_EXCEEDED naming maxNodes", f.Error)
	}
	if nf := s.nodeFailed(f.Error.NodeID); nf == nil || nf.Error.Code != protocol.CodeLimitExceeded {
		t.Errorf("node %s did not fail LIMIT_EXCEEDED: %+v", f.Error.NodeID, nf)
	}
}

// TestRTDistributeSpendAfterCancel: a client disconnect ends the parent,
// but a child whose stream was closed runs its whole batch (here, its http
// requests) to the parent's deadline.
func TestRTDistributeSpendAfterCancel(t *testing.T) {
	rtRepro(t)
	var hits atomic.Int64
	var last atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		last.Store(time.Now().UnixNano())
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..4 }}",DIST"nodes":[
		{"id":"inner","type":"map","with":{"items":"${{ 1..15 }}","concurrency":1,"nodes":[{"id":"get","type":"http","with":{"url":"` + srv.URL + `/x"}}]}}]}}]}`
	body := func(dist string) string {
		return `{"version":1,"workflow":` + strings.Replace(wf, "DIST", dist, 1) + `,"runtime":{"http":{"policy":{"allowPrivateNetwork":true}}},"permissions":["http:127.0.0.1"]}`
	}
	for _, mode := range []string{"in process", "distributed"} {
		hits.Store(0)
		var e *Engine
		var lf *lambdaFanOut
		if mode == "in process" {
			e, _ = wtEngine(nil)
		} else {
			var fo *pipeFanOut
			e, fo = fanEngines(nil)
			lf = &lambdaFanOut{child: fo.child}
			e.Services.FanOut = lf
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		d := ""
		if lf != nil {
			d = `"distribute":{"batchSize":1,"invocations":4},`
		}
		s, _ := fanRun(t, ctx, e, body(d))
		ended := time.Now()
		atEnd := hits.Load()
		if lf != nil {
			lf.wg.Wait()
		}
		time.Sleep(200 * time.Millisecond)
		after := hits.Load() - atEnd
		lastAt := time.Duration(last.Load() - ended.UnixNano())
		t.Logf("%s: cancelled at 300 ms; %d requests before the parent returned, %d after (the last %v after it); %s", mode, atEnd, after, lastAt.Round(time.Millisecond), rtLastLine(streamText(s)))
		if after > 0 {
			t.Errorf("%s: %d requests were sent after the execution ended", mode, after)
		}
	}
}

// TestRTDistributeNestingRefused (held): distribute is refused in a map of
// a map and in a child workflow, so a child never fans out again.
func TestRTDistributeNestingRefused(t *testing.T) {
	parent, _ := fanEngines(nil)
	inner := `{"id":"m2","type":"map","with":{"items":[1],"distribute":{"invocations":2},"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`
	for _, body := range []string{
		`{"version":1,"workflow":{"nodes":[{"id":"m","type":"map","with":{"items":[1],"nodes":[` + inner + `]}}]}}`,
		`{"version":1,"workflow":{"nodes":[{"id":"c","type":"workflow","with":{"workflow":"k"}}]},"runtime":{"workflows":[{"id":"k","nodes":[` + inner + `]}]}}`,
	} {
		if _, err := parent.PrepareBody([]byte(body)); err == nil || !strings.Contains(err.Error(), "only a map among the workflow's top-level nodes") {
			t.Errorf("accepted or refused otherwise: %v", err)
		}
	}
}
