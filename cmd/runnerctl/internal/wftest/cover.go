package wftest

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// caseCover is what one case saw of its workflow's nodes: the top-level
// ones, those inside maps and those of the child workflows its workflow
// nodes run, each named by its path as events name it, the map iterations'
// indexes left out ("each.fetch", "review.lint").
type caseCover struct {
	workflow string
	nodes    []wfNode
	ran      map[string]bool
	// whenFalse: nodes with a when that were skipped in an execution that
	// ran to its end (inside a map iteration or a child workflow that ran).
	whenFalse map[string]bool
}

// coverNodes lists the nodes of l's workflow, depth first, each named by
// its path: a map's inner nodes under the map's id, a child workflow's
// (runtime.workflows, named by a literal with.workflow) under the id of the
// workflow node that runs it.
func coverNodes(l *loaded) []wfNode {
	children := map[string]json.RawMessage{}
	for _, w := range l.req.Runtime.Workflows {
		var doc struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(w, &doc) == nil && doc.ID != "" {
			children[doc.ID] = w
		}
	}
	var out []wfNode
	var walk func(prefix string, doc json.RawMessage, stack []string)
	walk = func(prefix string, doc json.RawMessage, stack []string) {
		var d struct {
			Nodes []struct {
				wfNode
				With struct {
					Nodes    json.RawMessage `json:"nodes"`
					Workflow any             `json:"workflow"`
				} `json:"with"`
			} `json:"nodes"`
		}
		if json.Unmarshal(doc, &d) != nil {
			return
		}
		for _, n := range d.Nodes {
			wn := n.wfNode
			wn.ID = prefix + n.ID
			out = append(out, wn)
			switch n.Type {
			case "map":
				walk(wn.ID+".", json.RawMessage(`{"nodes": `+orEmpty(n.With.Nodes)+`}`), stack)
			case "workflow":
				id, ok := n.With.Workflow.(string)
				if !ok || strings.Contains(id, "${{") || slices.Contains(stack, id) || children[id] == nil {
					continue // named by an expression: known only when it runs
				}
				walk(wn.ID+".", children[id], append(stack, id))
			}
		}
	}
	walk("", l.req.Workflow, nil)
	return out
}

func orEmpty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "[]"
	}
	return string(raw)
}

// cover reads g as coverage of l's workflow.
func (g *got) cover(l *loaded) *caseCover {
	c := &caseCover{workflow: l.wfName, nodes: coverNodes(l), ran: map[string]bool{}, whenFalse: map[string]bool{}}
	types := map[string]string{}
	for _, n := range c.nodes {
		types[n.ID] = n.Type
	}
	// instances are the map iterations and child executions that ran, as
	// event ids name them ("each[2]", "review", "each[2].review").
	instances := map[string]bool{}
	for id, n := range g.Nodes {
		if n.Status == "skipped" {
			continue
		}
		path := index.ReplaceAllString(id, "")
		c.ran[path] = true
		for i := range len(id) {
			if id[i] == '.' {
				instances[id[:i]] = true
			}
		}
		switch types[path] {
		case "map":
			if items, ok := n.Output.([]any); ok && n.Status == "completed" {
				for k := range items {
					instances[id+"["+itoa(k)+"]"] = true
				}
			}
		case "workflow":
			if n.Status == "completed" {
				instances[id] = true
			}
		}
	}
	if g.Status == "failed" {
		return c
	}
	for _, n := range c.nodes {
		if n.When == nil {
			continue
		}
		parent, leaf := "", n.ID
		if i := strings.LastIndexByte(n.ID, '.'); i >= 0 {
			parent, leaf = n.ID[:i], n.ID[i+1:]
		}
		if parent == "" {
			if !c.ran[n.ID] {
				c.whenFalse[n.ID] = true
			}
			continue
		}
		for x := range instances {
			if index.ReplaceAllString(x, "") != parent {
				continue
			}
			if gn := g.Nodes[x+"."+leaf]; gn == nil || gn.Status == "skipped" {
				c.whenFalse[n.ID] = true
				break
			}
		}
	}
	return c
}

// coverReport is the coverage over all cases, by workflow.
type coverReport struct {
	Workflows []workflowCover `json:"workflows"`
}

type workflowCover struct {
	Workflow       string   `json:"workflow"`
	NeverRun       []string `json:"neverRun,omitempty"`
	WhenNeverTrue  []string `json:"whenNeverTrue,omitempty"`
	WhenNeverFalse []string `json:"whenNeverFalse,omitempty"`
}

func coverage(results []*Result) *coverReport {
	type acc struct {
		nodes     []wfNode
		ran       map[string]bool
		whenFalse map[string]bool
	}
	by := map[string]*acc{}
	for _, res := range results {
		c := res.cover
		if c == nil {
			continue
		}
		a := by[c.workflow]
		if a == nil {
			a = &acc{nodes: c.nodes, ran: map[string]bool{}, whenFalse: map[string]bool{}}
			by[c.workflow] = a
		}
		for k := range c.ran {
			a.ran[k] = true
		}
		for k := range c.whenFalse {
			a.whenFalse[k] = true
		}
	}
	rep := &coverReport{Workflows: []workflowCover{}}
	for _, name := range sortedKeys(by) {
		a := by[name]
		wc := workflowCover{Workflow: name}
		for _, n := range a.nodes {
			if !a.ran[n.ID] {
				wc.NeverRun = append(wc.NeverRun, n.ID)
			}
			if n.When == nil {
				continue
			}
			if !a.ran[n.ID] {
				wc.WhenNeverTrue = append(wc.WhenNeverTrue, n.ID)
			}
			if !a.whenFalse[n.ID] {
				wc.WhenNeverFalse = append(wc.WhenNeverFalse, n.ID)
			}
		}
		rep.Workflows = append(rep.Workflows, wc)
	}
	return rep
}

func (r *coverReport) write(w io.Writer) {
	fmt.Fprintln(w, "coverage:")
	all := true
	line := func(wf, what string, ids []string) {
		if len(ids) == 0 {
			return
		}
		all = false
		fmt.Fprintf(w, "  %s: %s: %s\n", clean(wf), what, clean(strings.Join(slices.Clone(ids), ", ")))
	}
	for _, wc := range r.Workflows {
		line(wc.Workflow, "nodes never run", wc.NeverRun)
		line(wc.Workflow, "when never seen true", wc.WhenNeverTrue)
		line(wc.Workflow, "when never seen false", wc.WhenNeverFalse)
	}
	if all {
		fmt.Fprintln(w, "  every node ran; every when was seen true and false")
	}
}
