package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The playground's papercuts (issue: a 401 for /favicon.ico, a stale graph
// after a request that is not JSON, "failed" broken in the attempts table,
// the token lost on reload, no address without a dev token) and its run
// history.

// TestPlaygroundAsksForNoFavicon: the page names an icon of its own,
// served beside it, so a browser asks neither /favicon.ico (a 401 from the
// API) nor anything that fails.
func TestPlaygroundAsksForNoFavicon(t *testing.T) {
	p := openPlayground(t)
	var mu sync.Mutex
	var failed []string
	if err := chromedp.Listen(p.ctx, func(ev any) {
		if r, ok := ev.(*network.EventResponseReceived); ok && r.Response != nil && r.Response.Status >= 400 {
			mu.Lock()
			failed = append(failed, r.Response.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	p.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
		return err
	}), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.conn[data-conn="ok"]`)))
	icon := get(p, chromedp.Evaluate[string](`document.querySelector('link[rel="icon"]').href`))
	if !strings.HasSuffix(icon, "/playground/favicon.svg") {
		t.Errorf("icon %q, want the page's own favicon.svg", icon)
	}
	resp, err := p.srv.client.Get(icon)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/svg+xml") {
		t.Errorf("GET %s: %d %s", icon, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		t.Errorf("the page's load asked for what failed: %q", failed)
	}
}

// TestPlaygroundClearsTheGraphOfARequestThatIsNotJSON: after a run, an
// editor that is not JSON leaves no graph of the previous request.
func TestPlaygroundClearsTheGraphOfARequestThatIsNotJSON(t *testing.T) {
	p := openPlayground(t)
	p.submit(`{"version":1,"workflow":{"nodes":[{"id":"greet","type":"set","with":{"value":1}}]}}`)
	p.wait(node("greet", "completed"))
	p.submit(`{"version":1,"workflow":{"nodes":[`)
	p.wait(`[data-panel="result"][data-status="invalid"]`)
	if n := get(p, chromedp.Evaluate[int](`document.querySelectorAll("[data-node-id]").length`)); n != 0 {
		t.Errorf("%d nodes of the previous request still drawn", n)
	}
	if out := p.text(".result .output"); out != "" {
		t.Errorf("the previous output is still shown: %q", out)
	}
	p.shot("cleared")
}

// TestPlaygroundAttemptStatesStayWhole: a long error squeezes the attempts
// table; the state ("failed") stays on one line.
func TestPlaygroundAttemptStatesStayWhole(t *testing.T) {
	p := openPlayground(t)
	long := strings.Repeat("an-unbroken-error-message-", 20)
	p.submit(`{"version":1,"workflow":{"nodes":[{"id":"boom","type":"fail","retry":{"maxAttempts":2,"backoffMs":0},"with":{"message":"` + long + `","code":"NOT_FOUND"}}]}}`)
	p.wait(node("boom", "failed"))
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="boom"]`)))
	p.wait(".inspector .attempts td.st")
	lines := get(p, chromedp.Evaluate[[]int](`[...document.querySelectorAll(".inspector .attempts td.st")].map((td) => {
		const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length; })`))
	if len(lines) != 2 {
		t.Fatalf("%d attempt states, want 2", len(lines))
	}
	for i, n := range lines {
		if n != 1 {
			t.Errorf("attempt %d's state takes %d lines, want 1", i+1, n)
		}
	}
	p.shot("attempts")
}

// TestPlaygroundKeepsTheTokenAcrossAReload: the token is in the tab's
// sessionStorage, so a reload connects without asking; it is in neither
// the URL, the page, nor localStorage.
func TestPlaygroundKeepsTheTokenAcrossAReload(t *testing.T) {
	p := openPlayground(t)
	p.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.conn[data-conn="ok"]`)))
	got := get(p, chromedp.Evaluate[[]string](`[location.href, document.documentElement.outerHTML, JSON.stringify(localStorage), String(document.querySelector("form.token").hidden)]`))
	for i, where := range []string{"the URL", "the page", "localStorage"} {
		if strings.Contains(got[i], p.token) {
			t.Errorf("the token is in %s", where)
		}
	}
	if got[3] != "true" {
		t.Error("the page asks for the token after a reload")
	}
	// A token the runner refuses is dropped: the next load asks.
	p.do(chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("runner.playground.token", "wrong")`),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.conn[data-conn="unauthorized"]`)))
	if kept := get(p, chromedp.Evaluate[string](`String(sessionStorage.getItem("runner.playground.token"))`)); kept != "null" {
		t.Errorf("a refused token is kept: %q", kept)
	}
}

// TestPlaygroundHistoryReopensARun: a run survives a reload in the
// History tab, without the token or the request's secrets, and reopens
// with its graph, result and events.
func TestPlaygroundHistoryReopensARun(t *testing.T) {
	p := openPlayground(t)
	p.submit(`{"version":1,"workflow":{"id":"kept<img src=x onerror=\"window.__pwned=1\">","nodes":[{"id":"greet","type":"set","with":{"value":"hi"}},
		{"id":"boom","type":"fail","needs":["greet"],"onError":"continue","with":{"message":"expected","code":"NOPE"}}]},
		"runtime":{"toolsets":[{"name":"t","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer sk-history-secret-1"}}],
		"http":{"secrets":{"k":{"value":"http-secret-2","hosts":["example.com"]}}}}}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.conn[data-conn="ok"]`)))
	stored := get(p, chromedp.Evaluate[string](`localStorage.getItem("runner.playground.history") || ""`))
	for _, secret := range []string{p.token, "sk-history-secret-1", "http-secret-2"} {
		if strings.Contains(stored, secret) {
			t.Errorf("the history stores %q", secret)
		}
	}
	if !strings.Contains(stored, `"(not kept)"`) {
		t.Errorf("the history lacks the marker of what it did not keep: %s", stored)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-tab="history"]`)))
	if n := get(p, chromedp.Evaluate[int](`document.querySelectorAll("ul.history li").length`)); n != 1 {
		t.Fatalf("%d runs in the history, want 1", n)
	}
	p.shot("history")
	if got := p.text("ul.history li"); !strings.Contains(got, "kept<img") || !strings.Contains(got, "completed") {
		t.Errorf("history entry %q, want the workflow's id, as text, and its status", got)
	}
	if pwned := get(p, chromedp.Evaluate[bool](`window.__pwned !== undefined || document.querySelector("ul.history img") !== null`)); pwned {
		t.Error("markup in a kept run's workflow id was parsed")
	}
	p.do(chromedp.Click(chromedp.CSS(`ul.history li button.open`)))
	p.wait(node("greet", "completed"))
	p.wait(node("boom", "failed"))
	p.wait(`[data-panel="result"][data-status="completed"]`)
	if got := get(p, chromedp.Evaluate[string](`document.querySelector("textarea[name=request]").value`)); !strings.Contains(got, `"kept<img`) {
		t.Errorf("the editor does not hold the reopened request: %s", got)
	}
	if got := get(p, chromedp.Evaluate[string](`document.querySelector(".raw").textContent`)); !strings.Contains(got, `"type":"accepted"`) {
		t.Errorf("the events are not back: %q", got)
	}
	if wide := get(p, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); wide {
		t.Error("the page is wider than the window")
	}
	p.shot("reopened")
	// Clear forgets them.
	p.do(chromedp.Click(chromedp.CSS(`[data-tab="history"]`)), chromedp.Click(chromedp.CSS(`[data-action="clear-history"]`)))
	if n := get(p, chromedp.Evaluate[int](`document.querySelectorAll("ul.history li").length`)); n != 0 {
		t.Errorf("%d runs after Clear", n)
	}
}

// TestPlaygroundHistoryIsBounded: 20 runs at most, and at most MAX_BYTES
// of text, a huge run cut to its start and end.
func TestPlaygroundHistoryIsBounded(t *testing.T) {
	p := openPlayground(t)
	got := get(p, chromedp.Evaluate[[]int](`import("/playground/history.js").then((h) => {
		h.clear();
		for (let i = 0; i < 25; i++) h.remember({request: {version: 1, workflow: {id: "r" + i, nodes: []}}, lines: ['{"type":"accepted"}'], status: "completed"});
		const n = h.list().length, first = h.list()[0].request.workflow.id === "r24" ? 1 : 0;
		const line = "x".repeat(1000);
		for (let i = 0; i < 8; i++) h.remember({request: {version: 1, workflow: {nodes: []}}, lines: Array(1000).fill(line), status: "failed"});
		const size = localStorage.getItem("runner.playground.history").length;
		const cut = h.list()[0].lines.some((l) => /lines not kept/.test(l)) ? 1 : 0;
		h.clear();
		return [n, first, size, h.MAX_BYTES, cut];
	})`, chromedp.EvalAwaitPromise))
	if got[0] != 20 || got[1] != 1 {
		t.Errorf("after 25 runs: %d kept (newest first: %v), want 20", got[0], got[1] == 1)
	}
	if got[2] > got[3] {
		t.Errorf("history of %d characters, over its bound of %d", got[2], got[3])
	}
	if got[4] != 1 {
		t.Error("a run of 1 MB of events was not cut")
	}
}

// TestRunWithTokensLogsThePlaygroundURL: RUNNER_TOKENS=… make run prints
// no dev token; the log line says where the page is, without any token.
func TestRunWithTokensLogsThePlaygroundURL(t *testing.T) {
	const token = "rt_playground_url_test"
	s := startRun(t, []string{"-dev"}, map[string]string{"RUNNER_TOKENS": token})
	m := await(t, regexp.MustCompile(`playground=(http://127\.0\.0\.1:\d+/playground/)\s`), s.stderr)
	resp, err := s.client.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: status %d", m[1], resp.StatusCode)
	}
	if strings.Contains(s.stdout.String()+s.stderr.String(), token) {
		t.Error("the token is printed")
	}
}
