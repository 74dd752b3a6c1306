package wftest

import (
	"encoding/json"
	"regexp"
	"sync"

	"github.com/runnerd/lambda-runner/protocol"
)

// sink keeps an execution's events (engine.Sink).
type sink struct {
	mu     sync.Mutex
	events []protocol.Event
	term   protocol.Terminal
}

func (s *sink) ExecutionID() string { return "test" }

func (s *sink) Emit(e protocol.Event) error {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	return nil
}

func (s *sink) Finish(t protocol.Terminal) error {
	s.mu.Lock()
	s.term = t
	s.mu.Unlock()
	return nil
}

// got is what a case's execution did, in the terms of expect.
type got struct {
	Status    string
	Output    any
	Error     *ExpectError
	Nodes     map[string]*gotNode
	Decisions []map[string]string
	Calls     Calls
	failures  []string
}

type gotNode struct {
	Type     string
	Status   string
	Output   any
	Attempts int
	Code     string
	Message  string
}

// got reads the events of l's execution.
func (s *sink) got(l *loaded) *got {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &got{Nodes: map[string]*gotNode{}}
	node := func(id, typ string) *gotNode {
		n := g.Nodes[id]
		if n == nil {
			n = &gotNode{Type: typ}
			g.Nodes[id] = n
		}
		return n
	}
	for _, e := range s.events {
		switch e := e.(type) {
		case *protocol.NodeStarted:
			n := node(e.NodeID, e.NodeType)
			n.Status, n.Attempts = "running", max(n.Attempts, e.Attempt)
		case *protocol.NodeCompleted:
			n := node(e.NodeID, e.NodeType)
			n.Status, n.Output, n.Code = string(protocol.NodeStatusCompleted), decode(e.Output), ""
		case *protocol.NodeFailed:
			n := node(e.NodeID, e.NodeType)
			n.Attempts = max(n.Attempts, e.Attempt)
			n.Code, n.Message = string(e.Error.Code), e.Error.Message
			if !e.Retrying {
				n.Status = string(protocol.NodeStatusFailed)
			}
		case *protocol.NodeSuspended:
			node(e.NodeID, e.NodeType).Status = string(protocol.NodeStatusSuspended)
		case *protocol.PermissionDecision:
			g.Decisions = append(g.Decisions, map[string]string{"nodeId": e.NodeID, "action": e.Action, "resource": e.Resource, "decision": e.Decision, "source": e.Source})
		}
	}
	for _, wn := range workflowNodes(l) {
		if g.Nodes[wn.ID] == nil {
			g.Nodes[wn.ID] = &gotNode{Type: wn.Type, Status: string(protocol.NodeStatusSkipped)}
		}
	}
	switch t := s.term.(type) {
	case *protocol.Result:
		g.Status, g.Output = string(t.Status), decode(t.Output)
	case *protocol.Error:
		g.Status = "failed"
		g.Error = &ExpectError{Code: string(t.Error.Code), NodeID: t.Error.NodeID}
		if n := g.Nodes[t.Error.NodeID]; n != nil && n.Code != "" {
			g.Error.Code = n.Code
		}
	}
	return g
}

// wfNode is a top-level node of a case's workflow.
type wfNode struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	When any    `json:"when"`
}

// workflowNodes lists the top-level nodes of l's workflow.
func workflowNodes(l *loaded) []wfNode {
	var doc struct {
		Nodes []wfNode `json:"nodes"`
	}
	_ = json.Unmarshal(l.req.Workflow, &doc)
	return doc.Nodes
}

// index strips a map iteration's index from a node id: "each[3].x" is
// "each.x" for coverage.
var index = regexp.MustCompile(`\[[0-9]+\]`)

// compare lists the differences between what e expects and g.
func compare(e *Expect, g *got) []diff {
	var out []diff
	if e.Status != "" && e.Status != g.Status {
		out = append(out, diff{"expect.status", e.Status, g.Status})
	}
	if len(e.Output) > 0 {
		out = diffJSON(out, "expect.output", decode(e.Output), g.Output)
	}
	if e.Error != nil {
		var ge ExpectError
		if g.Error != nil {
			ge = *g.Error
		}
		if e.Error.Code != "" && e.Error.Code != ge.Code && !(g.Error != nil && e.Error.Code == string(protocol.CodeExecutionFailed)) {
			out = append(out, diff{"expect.error.code", e.Error.Code, orNil(ge.Code)})
		}
		if e.Error.NodeID != "" && e.Error.NodeID != ge.NodeID {
			out = append(out, diff{"expect.error.nodeId", e.Error.NodeID, orNil(ge.NodeID)})
		}
	}
	for _, id := range sortedKeys(e.Nodes) {
		en := e.Nodes[id]
		p := "expect.nodes." + member(id)
		gn := g.Nodes[id]
		if gn == nil {
			out = append(out, diff{p, "a node", nil})
			continue
		}
		if en.Status != "" && en.Status != gn.Status {
			got := any(gn.Status)
			if gn.Status == "failed" {
				got = gn.Status + " (" + gn.Code + ": " + gn.Message + ")"
			}
			out = append(out, diff{p + ".status", en.Status, got})
		}
		if len(en.Output) > 0 {
			out = diffJSON(out, p+".output", decode(en.Output), gn.Output)
		}
		if en.Attempts != nil && *en.Attempts != gn.Attempts {
			out = append(out, diff{p + ".attempts", *en.Attempts, gn.Attempts})
		}
		if en.Error != nil && en.Error.Code != "" && (gn.Status != "failed" || en.Error.Code != gn.Code) {
			out = append(out, diff{p + ".error.code", en.Error.Code, orNil(gn.Code)})
		}
	}
	if e.Decisions != nil {
		out = append(out, compareDecisions(e.Decisions, g.Decisions)...)
	}
	if c := e.Calls; c != nil {
		for _, k := range []struct {
			name string
			want *int
			got  int
		}{{"models", c.Models, g.Calls.Models}, {"tools", c.Tools, g.Calls.Tools}, {"http", c.HTTP, g.Calls.HTTP}} {
			if k.want != nil && *k.want != k.got {
				out = append(out, diff{"expect.calls." + k.name, *k.want, k.got})
			}
		}
	}
	return out
}

// compareDecisions matches each expected decision, in order, against the
// decisions made, by the members it names.
func compareDecisions(want, got []map[string]string) []diff {
	var out []diff
	j := 0
	for i, w := range want {
		found := false
		for ; j < len(got); j++ {
			if decisionMatches(w, got[j]) {
				found, j = true, j+1
				break
			}
		}
		if !found {
			out = append(out, diff{"expect.decisions[" + itoa(i) + "]", w, remaining(got)})
			break
		}
	}
	return out
}

func decisionMatches(w, g map[string]string) bool {
	for k, v := range w {
		if g[k] != v {
			return false
		}
	}
	return true
}

// remaining is the decisions made, for a report line.
func remaining(got []map[string]string) any {
	if len(got) == 0 {
		return nil
	}
	return got
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
