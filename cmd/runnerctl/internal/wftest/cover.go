package wftest

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// caseCover is what one case saw of its workflow's top-level nodes.
type caseCover struct {
	workflow string
	nodes    []wfNode
	ran      map[string]bool
	// whenFalse: nodes with a when that were skipped in an execution that
	// ran to its end.
	whenFalse map[string]bool
}

// cover reads g as coverage of l's workflow.
func (g *got) cover(l *loaded) *caseCover {
	c := &caseCover{workflow: l.wfName, nodes: workflowNodes(l), ran: map[string]bool{}, whenFalse: map[string]bool{}}
	for id, n := range g.Nodes {
		if n.Status != "skipped" {
			c.ran[index.ReplaceAllString(id, "")] = true
		}
	}
	for _, n := range c.nodes {
		if n.When != nil && !c.ran[n.ID] && g.Status != "failed" {
			c.whenFalse[n.ID] = true
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
