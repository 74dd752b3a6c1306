package wftest

import (
	"encoding/json"
	"errors"

	"github.com/runnerd/lambda-runner/protocol"
)

// pinnedTypes are the node types a saved case pins: those that call
// outside the runner.
var pinnedTypes = map[string]bool{"model": true, "agent": true, "tool": true, "http": true}

// FromRun is the test case of a finished run: its request's workflow,
// input and runtime (keys, headers and secret values removed), its model,
// agent, tool and http nodes pinned to the outputs they produced (or the
// errors they ended with), and its result as the expectation. events must
// be those of a traced run (the outputs are in them).
func FromRun(name string, body []byte, events []protocol.Event) ([]byte, error) {
	var req protocol.ExecutionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	c := map[string]any{"name": name, "workflow": req.Workflow}
	if len(req.Input) > 0 {
		c["input"] = req.Input
	}
	if rt := withoutKeys(req.Runtime); rt != nil {
		c["runtime"] = rt
	}
	if len(req.Permissions) > 0 {
		c["permissions"] = req.Permissions
	}
	if len(req.Authorization.Grants) > 0 {
		c["authorization"] = req.Authorization
	}
	if len(req.ToolPolicies) > 0 {
		c["toolPolicies"] = req.ToolPolicies
	}
	if req.ConsentAvailable {
		c["consentAvailable"] = true
	}
	pins := map[string]any{}
	var term protocol.Terminal
	s := &sink{}
	for _, ev := range events {
		switch e := ev.(type) {
		case *protocol.NodeCompleted:
			if pinnedTypes[e.NodeType] {
				pins[e.NodeID] = map[string]any{"output": e.Output}
			}
		case *protocol.NodeFailed:
			if pinnedTypes[e.NodeType] && !e.Retrying {
				pins[e.NodeID] = map[string]any{"error": map[string]any{"code": e.Error.Code, "message": e.Error.Message}}
			}
		case protocol.Terminal:
			term = e
		}
		if _, ok := ev.(protocol.Terminal); !ok {
			_ = s.Emit(ev)
		}
	}
	if term == nil {
		return nil, errors.New("the run did not finish: no case to save")
	}
	_ = s.Finish(term)
	if len(pins) > 0 {
		c["mocks"] = map[string]any{"nodes": pins}
	}
	l := &loaded{req: req}
	g := s.got(l)
	e := expectOf(l, g)
	e.Calls = nil // the pinned nodes make none
	c["expect"] = e
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// withoutKeys is rt with what must never be written removed: model API
// keys and headers, toolset headers, the http secrets' values.
func withoutKeys(rt protocol.Runtime) any {
	for i := range rt.Models {
		rt.Models[i].APIKey, rt.Models[i].Headers = "", nil
	}
	for i := range rt.Toolsets {
		rt.Toolsets[i].Headers = nil
	}
	for k, s := range rt.HTTP.Secrets {
		s.Value = removedSecret
		rt.HTTP.Secrets[k] = s
	}
	b, err := json.Marshal(rt)
	if err != nil || string(b) == `{"http":{"policy":{}}}` {
		return nil
	}
	return json.RawMessage(b)
}

// removedSecret stands for a secret's value in a saved case: the nodes
// that sent it are pinned, and the value itself is never written.
const removedSecret = "removed-by-save-test"
