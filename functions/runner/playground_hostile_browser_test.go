package main

import "testing"

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
