// Package graph draws a workflow's DAG as Mermaid or Graphviz DOT: one box
// per node with its type, `when` and `onError`; map nodes and child
// workflow nodes as subgraphs holding the nodes they run.
package graph

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Node is one node of a workflow, as drawn.
type Node struct {
	ID      string
	Type    string
	Needs   []string
	When    string
	OnError string
	// Child is what a map runs per item, or the child workflow a workflow
	// node runs when the request carries it; nil otherwise.
	Child *Graph
	// ChildID is the child workflow's id, for workflow nodes.
	ChildID string
}

// Graph is a workflow's nodes in document order.
type Graph struct {
	ID    string
	Nodes []*Node
}

type docNode struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Needs   []string       `json:"needs"`
	When    string         `json:"when"`
	OnError string         `json:"onError"`
	With    map[string]any `json:"with"`
}

type doc struct {
	ID    string    `json:"id"`
	Nodes []docNode `json:"nodes"`
}

// maxDepth bounds how deep child workflows are drawn: they may call
// themselves.
const maxDepth = 8

// maxDrawn bounds the boxes drawn in all: a child workflow is drawn again
// under every node that runs it, so k such nodes calling their own
// workflow would draw k^maxDepth boxes (a 641-byte file, k = 8, ran out
// of 6 GB). Past it, map and workflow nodes are drawn without what they
// run. It is the runner's own default maxNodes.
const maxDrawn = 10_000

// Parse reads a whole execution request or a bare workflow document.
func Parse(src []byte) (*Graph, error) {
	var top struct {
		Workflow json.RawMessage `json:"workflow"`
		Nodes    json.RawMessage `json:"nodes"`
		Runtime  struct {
			Workflows []json.RawMessage `json:"workflows"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal(src, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raw := top.Workflow
	if raw == nil {
		if top.Nodes == nil {
			return nil, errors.New(`neither an execution request (no "workflow") nor a workflow document (no "nodes")`)
		}
		raw = src
	}
	var d doc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	children := map[string]doc{}
	for i, c := range top.Runtime.Workflows {
		var cd doc
		if err := json.Unmarshal(c, &cd); err != nil {
			return nil, fmt.Errorf("runtime.workflows[%d]: %w", i, err)
		}
		children[cd.ID] = cd
	}
	drawn := 0
	return build(d.ID, d.Nodes, children, 0, &drawn), nil
}

// build draws nodes; drawn counts the boxes drawn so far, against maxDrawn.
func build(id string, nodes []docNode, children map[string]doc, depth int, drawn *int) *Graph {
	g := &Graph{ID: id}
	*drawn += len(nodes)
	for _, dn := range nodes {
		n := &Node{ID: dn.ID, Type: dn.Type, Needs: dn.Needs, When: dn.When, OnError: dn.OnError}
		expand := depth < maxDepth && *drawn < maxDrawn
		switch dn.Type {
		case "map":
			if raw, err := json.Marshal(dn.With["nodes"]); err == nil && expand {
				var inner []docNode
				if json.Unmarshal(raw, &inner) == nil && len(inner) > 0 {
					n.Child = build("", inner, children, depth+1, drawn)
				}
			}
		case "workflow":
			n.ChildID, _ = dn.With["workflow"].(string)
			if c, ok := children[n.ChildID]; ok && expand {
				n.Child = build(c.ID, c.Nodes, children, depth+1, drawn)
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	return g
}

// notes are the lines under a node's name.
func (n *Node) notes() []string {
	t := n.Type
	if n.ChildID != "" {
		t += " " + n.ChildID
	}
	out := []string{t}
	if n.When != "" {
		out = append(out, "when: "+n.When)
	}
	if n.OnError != "" {
		out = append(out, "onError: "+n.OnError)
	}
	return out
}
