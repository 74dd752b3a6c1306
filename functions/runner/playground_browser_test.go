package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The playground's browser tests drive Debian's headless chromium through
// the DevTools protocol (chromedp) against the local server run serves, on
// a free port, as a developer would use it: the page, its hooks
// (docs/playground.md) and the real API behind it.
//
// PLAYGROUND_SCREENSHOTS=dir keeps a screenshot of each test's last state.

// browserPatience bounds every wait on the page.
const browserPatience = 30 * time.Second

// chromium finds the browser, or skips the test; under CI (CI set, as
// .ci/run and CI services do) a missing browser fails it instead.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatalf("chromium not found, and CI=%s: .ci/run installs it (apt-get install chromium)", ci)
	}
	t.Skip("chromium not found: apt-get install chromium to run the playground's browser tests")
	return ""
}

// gate is an MCP server whose "wait" tool blocks until the test opens the
// gate, so that a test sees a node running for as long as it needs to.
type gate struct {
	url  string
	open chan struct{}
}

func startGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{open: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Blocks until the test opens the gate."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-g.open:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "opened"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Sends the message back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Message string `json:"message"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	s := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		// Every execution closes the MCP sessions it opened, when it ends
		// (hostile_cancel_test.go holds it to that); its end may come a
		// moment after the page showed it.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var open []*mcp.ServerSession
			for ss := range srv.Sessions() {
				open = append(open, ss)
			}
			if len(open) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%d MCP sessions still open 5s after the test", len(open))
				for _, ss := range open {
					_ = ss.Close()
				}
				break
			}
		}
		s.CloseClientConnections()
		s.Close()
	})
	g.url = s.URL
	return g
}

// page is a browser tab on the playground of a running local server.
type tab struct {
	t     *testing.T
	ctx   context.Context
	srv   *server
	token string
}

// openPlayground starts the local server (-dev) and a browser on its page,
// with the token in the fragment as run prints it.
func openPlayground(t *testing.T) *tab {
	t.Helper()
	exe := chromium(t)
	s := startRun(t, []string{"-dev"}, nil)
	token := await(t, devTokenAt, s.stdout)[1]
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // as root in CI
		chromedp.Flag("headless", true),
		chromedp.DisableGPU,
		chromedp.WindowSize(1440, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx)
		cancelTab()
		cancelAlloc()
	})
	// The first run starts the browser, tied to the context it runs on:
	// ctx itself, not one of the timeouts of do.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	p := &tab{t: t, ctx: ctx, srv: s, token: token}
	// Every Content-Security-Policy violation the page would report is
	// kept, from before its first script runs.
	p.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`})
		return err
	}))
	p.do(chromedp.Navigate(s.base+"/playground/#token="+token),
		chromedp.WaitVisible(chromedp.CSS(`.conn[data-conn="ok"]`)))
	t.Cleanup(p.checkCSP)
	return p
}

// do runs actions, failing the test after browserPatience.
func (p *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.shot("failed")
		p.t.Fatalf("browser: %v", err)
	}
}

// get runs one action that returns a value.
func get[T any](p *tab, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserPatience)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.shot("failed")
		p.t.Fatalf("browser: %v", err)
	}
	return v
}

// shot saves a screenshot under PLAYGROUND_SCREENSHOTS, if set.
func (p *tab) shot(name string) {
	dir := os.Getenv("PLAYGROUND_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(p.t.Name(), "/", "_")+"-"+name+".png"), png, 0o644)
	}
}

func (p *tab) checkCSP() {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp`))
	if err != nil {
		p.t.Errorf("reading CSP violations: %v", err)
		return
	}
	if len(violations) > 0 {
		p.t.Errorf("Content-Security-Policy violations: %q", violations)
	}
}

// submit puts request in the editor and presses Run.
func (p *tab) submit(request string) {
	p.t.Helper()
	p.do(chromedp.SetValue(chromedp.CSS(`textarea[name="request"]`), request),
		chromedp.Click(chromedp.CSS(`button[data-action="run"]`)))
}

func (p *tab) wait(sel string) {
	p.t.Helper()
	p.do(chromedp.WaitReady(chromedp.CSS(sel)))
}

func (p *tab) text(sel string) string {
	p.t.Helper()
	return get(p, chromedp.TextContent(chromedp.CSS(sel)))
}

func node(id, state string) string {
	return `[data-node-id="` + id + `"][data-state="` + state + `"]`
}

func TestPlaygroundNodesGoPendingRunningCompleted(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	p.submit(`{"version":1,"workflow":{"id":"live","nodes":[
		{"id":"hold","type":"tool","with":{"toolset":"g","tool":"wait","arguments":{}}},
		{"id":"after","type":"set","needs":["hold"],"with":{"value":"${{ nodes.hold.output.content[0].text }}"}}]},
	"runtime":{"toolsets":[{"name":"g","url":"` + g.url + `"}]},
	"toolPolicies":[{"match":"g/*","decision":"allow"}]}`)
	p.wait(node("hold", "running"))
	p.wait(node("after", "pending"))
	p.shot("running")
	close(g.open)
	p.wait(node("hold", "completed"))
	p.wait(node("after", "completed"))
	p.wait(`[data-panel="result"][data-status="completed"]`)
	if out := p.text(".result .output"); !strings.Contains(out, "opened") {
		t.Errorf("result output %q, want the tool's text", out)
	}
	// The inspector shows the traced input and output.
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="after"]`)))
	if got := p.text(".inspector"); !strings.Contains(got, "Output") || !strings.Contains(got, `"opened"`) {
		t.Errorf("inspector %q lacks the node's output", got)
	}
	p.shot("done")
	// The copied curl command runs the same request.
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Log("no curl: the copied command is not run")
		return
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-tab="result"]`)),
		chromedp.Click(chromedp.CSS(`button[data-action="copy-curl"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.copied`)))
	cmdline := p.text(".copied")
	if !strings.HasPrefix(cmdline, "curl ") || strings.Contains(cmdline, p.token) {
		t.Fatalf("copied command %q: want a curl command without the token", cmdline)
	}
	cmd := exec.Command("bash", "-c", strings.Replace(cmdline, "curl ", curl+" ", 1))
	cmd.Env = append(os.Environ(), "RUNNER_TOKEN="+p.token)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"type":"result"`) || !strings.Contains(string(out), `"status":"completed"`) {
		t.Errorf("the copied curl command: %v\n%s", err, out)
	}
}

func TestPlaygroundFailedNodeShowsItsError(t *testing.T) {
	p := openPlayground(t)
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"ok","type":"set","with":{"value":1}},
		{"id":"boom","type":"fail","needs":["ok"],"retry":{"maxAttempts":2,"backoffMs":0},"with":{"message":"no such issue","code":"NOT_FOUND"}},
		{"id":"never","type":"set","needs":["boom"],"with":{"value":2}}]}}`)
	p.wait(node("boom", "failed"))
	p.wait(node("never", "skipped"))
	p.wait(`[data-panel="result"][data-status="failed"]`)
	if got := p.text(`[data-node-id="boom"]`); !strings.Contains(got, "NOT_FOUND") || !strings.Contains(got, "attempt 2") {
		t.Errorf("failed node shows %q, want its error code and its attempt", got)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="boom"]`)))
	if got := p.text(".inspector"); !strings.Contains(got, "no such issue") {
		t.Errorf("inspector %q lacks the error message", got)
	}
	if rows := get(p, chromedp.Evaluate[int](`document.querySelectorAll(".inspector .attempts tr").length`)); rows != 3 {
		t.Errorf("attempts table has %d rows, want a heading and 2 attempts", rows)
	}
	p.shot("failed")
}

func TestPlaygroundMapShowsIterations(t *testing.T) {
	p := openPlayground(t)
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"each","type":"map","with":{"items":["a","b","c","d"],"concurrency":2,"nodes":[
			{"id":"up","type":"set","with":{"value":"${{ upper(item) }}"}},
			{"id":"check","type":"fail","needs":["up"],"onError":"continue","when":"${{ index == 2 }}","with":{"message":"two","code":"BAD_ITEM"}}]}},
		{"id":"report","type":"set","needs":["each"],"with":{"value":"${{ nodes.each.output }}"}}]}}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	if got := p.text(`[data-node-id="each"] .extra`); got != "4 iterations · 1 failed" {
		t.Errorf("map node says %q, want 4 iterations · 1 failed", got)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="each"] [data-action="open"]`)))
	// The failed iteration opens first, with its own graph.
	p.wait(node("each[2].up", "completed"))
	p.wait(node("each[2].check", "failed"))
	p.shot("iteration")
	// The iteration picker beside the crumbs goes to another one.
	p.do(chromedp.Evaluate[chromedp.Void](`{const s = document.querySelector(".crumbs select"); s.value = "3"; s.dispatchEvent(new Event("change"));}`))
	p.wait(node("each[3].up", "completed"))
	p.wait(node("each[3].check", "skipped"))
}

func TestPlaygroundInvalidRequestListsProblems(t *testing.T) {
	p := openPlayground(t)
	req := `{"version": 1, "workflow": {"nodes": [
  {"id": "a", "type": "set", "with": {"value": 1}},
  {"id": "b", "type": "set", "needs": ["nope"], "with": {"value": 2}}
]}}`
	p.submit(req)
	p.wait(`[data-panel="result"][data-status="invalid"]`)
	sel := `li[data-path="workflow.nodes[1].needs[0]"]`
	p.wait(sel)
	p.shot("problems")
	p.do(chromedp.Click(chromedp.CSS(sel)))
	start := get(p, chromedp.Evaluate[int](`document.querySelector("textarea[name=request]").selectionStart`))
	if want := strings.Index(req, `"nope"`); start != want {
		t.Errorf("cursor at %d after clicking the problem, want %d (the needs entry)", start, want)
	}
}

func TestPlaygroundConsentReRunsWithTheGrant(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"page","type":"tool","with":{"toolset":"g","tool":"echo","arguments":{"message":"paged"}}}]},
	"runtime":{"toolsets":[{"name":"g","url":"` + g.url + `"}]},
	"toolPolicies":[{"match":"g/*","decision":"consent"}],"consentAvailable":true}`)
	p.wait(`[data-panel="result"][data-status="suspended"]`)
	p.wait(node("page", "suspended"))
	if got := p.text(".consent"); !strings.Contains(got, "tool.call g/echo") {
		t.Errorf("consent panel %q does not name the action", got)
	}
	p.shot("suspended")
	p.do(chromedp.Click(chromedp.CSS(`button[data-action="grant"]`)))
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.wait(node("page", "completed"))
	grants := get(p, chromedp.Value(chromedp.CSS(`textarea[name="grants"]`)))
	if !strings.Contains(grants, `"g/echo"`) {
		t.Errorf("grants field %q lacks the grant given", grants)
	}
}

func TestPlaygroundStopInterruptsRunningNodes(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	defer close(g.open)
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"hold","type":"tool","with":{"toolset":"g","tool":"wait","arguments":{}}}]},
	"runtime":{"toolsets":[{"name":"g","url":"` + g.url + `"}]},
	"toolPolicies":[{"match":"g/*","decision":"allow"}]}`)
	p.wait(node("hold", "running"))
	p.do(chromedp.Click(chromedp.CSS(`button[data-action="stop"]`)))
	p.wait(node("hold", "interrupted"))
	p.wait(`[data-panel="result"][data-status="failed"]`)
}

func TestPlaygroundKeepsTheTokenOutOfThePage(t *testing.T) {
	p := openPlayground(t)
	html := get(p, chromedp.OuterHTML(chromedp.CSS("html")))
	href := get(p, chromedp.Location())
	if strings.Contains(html, p.token) {
		t.Error("the token is in the page's HTML")
	}
	if strings.Contains(href, p.token) || strings.Contains(href, "#") {
		t.Errorf("the URL after load is %q, want it without the fragment", href)
	}
}

func TestPlaygroundRefusesForeignHostsAndOrigins(t *testing.T) {
	chromium(t) // the same -short and CI rules as the page's tests
	s := startRun(t, []string{"-dev"}, nil)
	token := await(t, devTokenAt, s.stdout)[1]
	tests := []struct {
		name, method, path string
		header             map[string]string
		want               int
	}{
		{"page", "GET", "/playground/", nil, http.StatusOK},
		{"page, localhost", "GET", "/playground/", map[string]string{"Host": "localhost:8080"}, http.StatusOK},
		{"page, rebound name", "GET", "/playground/", map[string]string{"Host": "evil.example:8080"}, http.StatusForbidden},
		{"api, rebound name", "GET", "/v1/capabilities", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"cross-origin POST", "POST", "/v1/executions", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cross-origin POST, no fetch metadata", "POST", "/v1/executions", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"same-origin POST", "POST", "/v1/executions", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, s.base+tt.path, strings.NewReader(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`))
			req.Header.Set("Authorization", "Bearer "+token)
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.path == "/playground/" && resp.StatusCode == http.StatusOK {
				if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
					t.Errorf("Content-Security-Policy %q", csp)
				}
				if rp := resp.Header.Get("Referrer-Policy"); rp != "no-referrer" {
					t.Errorf("Referrer-Policy %q", rp)
				}
			}
		})
	}
}

func TestPlaygroundLaysOutByNeeds(t *testing.T) {
	p := openPlayground(t)
	// The page's own layout module, on a diamond with a long edge: layers
	// by the longest path, every node right of what it needs.
	got := get(p, chromedp.Evaluate[[][]string](`import("/playground/layout.js").then(({layout}) => layout([
		{id: "d", needs: ["b", "c", "a"]}, {id: "a"}, {id: "c", needs: ["a"]}, {id: "b", needs: ["a"]}, {id: "e", needs: ["a"]},
	]).layers)`, chromedp.EvalAwaitPromise))
	want := [][]string{{"a"}, {"c", "b", "e"}, {"d"}}
	if len(got) != len(want) || len(got[1]) != 3 || got[0][0] != "a" || got[2][0] != "d" {
		t.Errorf("layers %q, want %q (in some order within a layer)", got, want)
	}
}

func TestPlaygroundRunsAThousandNodes(t *testing.T) {
	p := openPlayground(t)
	// Ten chains of a hundred set nodes each.
	var nodes []string
	for i := range 1000 {
		needs := ""
		if i >= 10 {
			needs = `,"needs":["n` + itoa(i-10) + `"]`
		}
		nodes = append(nodes, `{"id":"n`+itoa(i)+`","type":"set"`+needs+`,"with":{"value":`+itoa(i)+`}}`)
	}
	p.submit(`{"version":1,"workflow":{"nodes":[` + strings.Join(nodes, ",") + `]}}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	done := get(p, chromedp.Evaluate[int](`document.querySelectorAll('[data-node-id][data-state="completed"]').length`))
	if done != 1000 {
		t.Errorf("%d nodes shown completed, want 1000", done)
	}
	ms := get(p, chromedp.Evaluate[string](`document.querySelector(".foot .size").dataset.layoutMs`))
	t.Logf("1000 nodes laid out and drawn in %s ms", ms)
	p.shot("done")
}

func TestRunDevPrintsThePlaygroundURL(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", ":0"} {
		t.Run(addr, func(t *testing.T) {
			s := startRun(t, []string{"-dev"}, map[string]string{"RUNNER_ADDR": addr})
			token := await(t, devTokenAt, s.stdout)[1]
			m := await(t, regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/playground/#token=(\S+)`), s.stdout)
			if m[2] != token {
				t.Errorf("playground URL carries %q, want the dev token", m[2])
			}
			resp, err := s.client.Get(m[1] + "/playground/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET the printed page: status %d", resp.StatusCode)
			}
			if strings.Contains(s.stderr.String(), token) {
				t.Errorf("the token is in the logs:\n%s", s.stderr)
			}
		})
	}
}

// pick loads one of examples/ with the page's picker.
func (p *tab) pick(name string) {
	p.t.Helper()
	p.do(chromedp.Evaluate[chromedp.Void](`{const s = document.querySelector("select[name=example]"); s.value = ` + strconvQuote(name) + `; s.dispatchEvent(new Event("change"));}`))
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestPlaygroundRunsToolExampleWithTheRuntimeSection(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	p.pick("tool.json")
	// The example's toolsets move to their field; point it at this
	// test's MCP server, which has the same echo tool.
	toolsets := get(p, chromedp.Value(chromedp.CSS(`textarea[name="toolsets"]`)))
	if !strings.Contains(toolsets, "127.0.0.1:3001") {
		t.Fatalf("toolsets field %q, want tool.json's", toolsets)
	}
	if req := get(p, chromedp.Value(chromedp.CSS(`textarea[name="request"]`))); strings.Contains(req, "toolsets") {
		t.Errorf("the editor still holds the toolsets:\n%s", req)
	}
	p.do(chromedp.SetValue(chromedp.CSS(`textarea[name="toolsets"]`), strings.Replace(toolsets, "http://127.0.0.1:3001/mcp", g.url, 1)),
		chromedp.Click(chromedp.CSS(`button[data-action="run"]`)))
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.wait(node("echo", "completed"))
	if out := p.text(".result .output"); !strings.Contains(out, "hello from") {
		t.Errorf("output %q, want the echoed message", out)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="echo"]`)))
	if got := p.text(".inspector .decisions"); !strings.Contains(got, "allow") || !strings.Contains(got, "tool.call demo/echo") {
		t.Errorf("inspector decisions %q, want the tool call allowed", got)
	}
	p.shot("done")
}

func TestPlaygroundBareWorkflowAndItsInput(t *testing.T) {
	p := openPlayground(t)
	p.do(chromedp.SetValue(chromedp.CSS(`textarea[name="input"]`), `{"name": 7}`))
	p.submit(`{"input": {"type": "object", "properties": {"name": {"type": "string"}}},
 "nodes": [{"id": "hi", "type": "set", "with": {"value": "${{ input.name }}"}}]}`)
	p.wait(`[data-panel="result"][data-status="invalid"]`)
	sel := `li[data-path^="input"]`
	p.wait(sel)
	p.do(chromedp.Click(chromedp.CSS(sel)))
	if focused := get(p, chromedp.Evaluate[string](`document.activeElement.name`)); focused != "input" {
		t.Errorf("clicking the input's problem focused %q, want the input field", focused)
	}
	p.do(chromedp.SetValue(chromedp.CSS(`textarea[name="input"]`), `{"name": "Ada"}`),
		chromedp.Click(chromedp.CSS(`button[data-action="run"]`)))
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.wait(node("hi", "completed"))
	// Not JSON at all: a problem before anything is sent, at the place.
	p.submit(`{"nodes": [}`)
	p.wait(`[data-panel="result"][data-status="invalid"]`)
	p.wait(`li[data-path=""]`)
}

func TestPlaygroundOpensAChildWorkflow(t *testing.T) {
	p := openPlayground(t)
	p.pick("fanout.json")
	p.do(chromedp.Click(chromedp.CSS(`button[data-action="run"]`)))
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.wait(node("optional", "failed"))
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="summary"] [data-action="open"]`)))
	p.wait(node("summary.join", "completed"))
	// Back up by the crumbs.
	p.do(chromedp.Click(chromedp.CSS(`.crumbs .crumb`)))
	p.wait(node("report", "completed"))
}

// TestPlaygroundHostileValuesStayText is an author's attack on the page:
// markup in an error message, an output, a permission reason and a node
// named __proto__ must show as text and run nothing.
func TestPlaygroundHostileValuesStayText(t *testing.T) {
	p := openPlayground(t)
	const markup = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"__proto__","type":"set","with":{"value":` + strconvQuote(markup) + `}},
		{"id":"constructor","type":"fail","onError":"continue","with":{"message":` + strconvQuote(markup) + `,"code":"HOSTILE"}},
		{"id":"out","type":"set","needs":["__proto__","constructor"],"with":{"value":{"<i>k</i>":"${{ nodes.__proto__.output }}"}}}]}}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.wait(node("__proto__", "completed"))
	p.wait(node("constructor", "failed"))
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="constructor"]`)))
	if got := p.text(".inspector"); !strings.Contains(got, markup) {
		t.Errorf("inspector %q does not show the message as text", got)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="__proto__"]`)))
	p.do(chromedp.Click(chromedp.CSS(`[data-tab="events"]`)))
	pwned := get(p, chromedp.Evaluate[bool](`window.__pwned !== undefined || document.querySelector("img, script:not([src]), i") !== null`))
	if pwned {
		t.Error("markup from the run became elements of the page")
	}
	if out := p.text(".result .output"); !strings.Contains(out, "<i>k</i>") {
		t.Errorf("output %q, want the markup as text", out)
	}
}

// TestPlaygroundBoundsTheRawEvents runs a map of 9,000 items (the map and
// its items stay within maxNodes): eighteen thousand events, of which the
// Events panel keeps a thousand lines.
func TestPlaygroundBoundsTheRawEvents(t *testing.T) {
	p := openPlayground(t)
	items := make([]string, 9000)
	for i := range items {
		items[i] = itoa(i)
	}
	p.submit(`{"version":1,"trace":false,"workflow":{"nodes":[
		{"id":"each","type":"map","with":{"items":[` + strings.Join(items, ",") + `],"concurrency":16,"nodes":[
			{"id":"v","type":"set","with":{"value":"${{ item }}"}}]}}]}}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	if got := p.text(`[data-node-id="each"] .extra`); got != "9000 iterations" {
		t.Errorf("map node says %q, want 9000 iterations", got)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-tab="events"]`)))
	lines := get(p, chromedp.Evaluate[int](`document.querySelector(".raw").textContent.split("\n").length`))
	if lines > 1001 {
		t.Errorf("the Events panel holds %d lines, want at most 1,001", lines)
	}
	if note := p.text(".events-note"); !strings.Contains(note, "18004 events") {
		t.Errorf("events note %q", note)
	}
}

// "Save as test" writes the finished run as a runnerctl test case: the
// tool node pinned to its output, the result expected, no key written.
func TestPlaygroundSavesARunAsATest(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	close(g.open)
	p.submit(`{"version":1,"trace":true,"workflow":{"id":"saved","nodes":[
		{"id":"hold","type":"tool","with":{"toolset":"g","tool":"wait","arguments":{}}},
		{"id":"after","type":"set","needs":["hold"],"with":{"value":"${{ nodes.hold.output.content[0].text }}"}}]},
	"runtime":{"toolsets":[{"name":"g","url":"` + g.url + `","headers":{"X-Key":"toolset-secret"}}]},
	"toolPolicies":[{"match":"g/*","decision":"allow"}]}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.do(chromedp.Click(chromedp.CSS(`[data-tab="result"]`)),
		chromedp.Click(chromedp.CSS(`button[data-action="save-test"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a.save-test`)))
	if name := p.text("a.save-test"); name != "saved.test.json" {
		t.Errorf("download named %q", name)
	}
	var c struct {
		Workflow struct{ ID string }
		Mocks    struct {
			Nodes map[string]struct{ Output json.RawMessage }
		}
		Expect struct {
			Status string
			Output json.RawMessage
			Nodes  map[string]struct{ Status string }
		}
	}
	text := p.text(".copied")
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		t.Fatalf("the saved case is not JSON: %v\n%s", err, text)
	}
	if c.Workflow.ID != "saved" || len(c.Mocks.Nodes["hold"].Output) == 0 || c.Mocks.Nodes["after"].Output != nil ||
		c.Expect.Status != "completed" || c.Expect.Nodes["after"].Status != "completed" || !strings.Contains(string(c.Expect.Output), "opened") {
		t.Errorf("saved case:\n%s", text)
	}
	if strings.Contains(text, "toolset-secret") || strings.Contains(text, p.token) {
		t.Errorf("the saved case holds a key:\n%s", text)
	}
	p.checkCSP()
}
