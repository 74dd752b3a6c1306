package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A pasted workflow the graph cannot read (needs that is not an array)
// still goes to the runner, whose problems are listed, and the page runs
// the next request: it was left "running" with nothing sent, every later
// Run ignored until a reload, which loses the token.
func TestPlaygroundSurvivesAnUndrawableWorkflow(t *testing.T) {
	p := openPlayground(t)
	p.submit(`{"nodes":[{"id":"a","type":"set","needs":5,"with":{"value":1}}]}`)
	p.wait(`[data-panel="result"][data-status="invalid"]`)
	p.wait(`[data-path="workflow.nodes[0].needs"]`)
	p.submit(`{"nodes":[{"id":"b","type":"set","with":{"value":1}}]}`)
	p.wait(`[data-panel="result"][data-status="completed"]`)
	p.wait(node("b", "completed"))
}

// A tool named "*" suspended as "tool.call g/*": granted as shown, that
// resource is a pattern, and the re-run allowed a tool chosen at run time
// (here echo) that the consent list never named. The runner denies such a
// resource now (docs/permissions.md), so the consent list names only what
// a grant of it allows; the page still refuses to grant a pattern should a
// runner ask for one.
func TestPlaygroundWillNotGrantAPattern(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"look","type":"tool","onError":"continue","with":{"toolset":"g","tool":"*","arguments":{}}},
		{"id":"hidden","type":"tool","with":{"toolset":"g","tool":"${{ 'ec' + 'ho' }}","arguments":{"message":"shown for consent"}}}]},
	"runtime":{"toolsets":[{"name":"g","url":"` + g.url + `"}]},
	"toolPolicies":[{"match":"g/*","decision":"consent"}],"consentAvailable":true}`)
	p.wait(`[data-panel="result"][data-status="suspended"]`)
	if got := p.text(".consent"); strings.Contains(got, "g/*") || !strings.Contains(got, "tool.call g/echo") {
		t.Errorf("consent panel %q, want g/echo alone", got)
	}
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="look"]`)))
	if got := p.text(".inspector"); !strings.Contains(got, "contains '*'") {
		t.Errorf("inspector of look %q, want the runner's denial", got)
	}
}

// Markup in the places TestPlaygroundHostileValuesStayText does not reach:
// a problem's path (a key of the workflow), a consent request and its
// permission decision (a tool's name), the crumbs (a workflow id).
func TestPlaygroundHostileValuesInProblemsAndConsentStayText(t *testing.T) {
	p := openPlayground(t)
	g := startGate(t)
	const markup = `<img src=x onerror="window.__pwned=1">`
	p.submit(`{"version":1,"workflow":{"id":` + strconvQuote(markup) + `,"nodes":[
		{"id":"a","type":"set","with":{"value":{` + strconvQuote(markup) + `:"${{ nodes.zz.output }}"}}}]}}`)
	p.wait(`[data-panel="result"][data-status="invalid"]`)
	if got := p.text(".problems"); !strings.Contains(got, "workflow.nodes[0].with.value."+markup) {
		t.Errorf("problems %q do not show the path as text", got)
	}
	p.submit(`{"version":1,"workflow":{"nodes":[
		{"id":"t","type":"tool","with":{"toolset":"g","tool":` + strconvQuote(markup) + `,"arguments":{}}}]},
	"runtime":{"toolsets":[{"name":"g","url":"` + g.url + `"}]},
	"toolPolicies":[{"match":"g/*","decision":"consent"}],"consentAvailable":true}`)
	p.wait(`[data-panel="result"][data-status="suspended"]`)
	p.do(chromedp.Click(chromedp.CSS(`[data-node-id="t"]`)))
	if got := p.text(".inspector"); !strings.Contains(got, "tool.call g/"+markup) {
		t.Errorf("inspector %q does not show the decision as text", got)
	}
	if got := p.text(".consent"); !strings.Contains(got, "g/"+markup) {
		t.Errorf("consent %q does not show the resource as text", got)
	}
	if get(p, chromedp.Evaluate[bool](`window.__pwned !== undefined || document.querySelector("img") !== null`)) {
		t.Error("markup from the run became elements of the page")
	}
}
