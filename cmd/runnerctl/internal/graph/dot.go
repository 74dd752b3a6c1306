package graph

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DOT writes g as a Graphviz digraph. Map and workflow nodes are clusters
// holding the node itself (edges attach to it) and what it runs.
func DOT(w io.Writer, g *Graph) error {
	var b strings.Builder
	name := g.ID
	if name == "" {
		name = "workflow"
	}
	fmt.Fprintf(&b, "digraph %s {\n", strconv.Quote(name))
	b.WriteString("  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	dotScope(&b, g, "", "  ")
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func dotLabel(n *Node) string {
	return strconv.Quote(strings.Join(append([]string{n.ID}, n.notes()...), "\n"))
}

func dotNode(b *strings.Builder, indent, id string, n *Node) {
	style := ""
	switch {
	case n.OnError == "continue":
		style = ", style=dashed"
	case n.When != "":
		style = ", style=rounded"
	}
	fmt.Fprintf(b, "%s%s [label=%s%s];\n", indent, strconv.Quote(id), dotLabel(n), style)
}

func dotScope(b *strings.Builder, g *Graph, prefix, indent string) {
	for _, n := range g.Nodes {
		id := prefix + n.ID
		if n.Child == nil {
			dotNode(b, indent, id, n)
			continue
		}
		fmt.Fprintf(b, "%ssubgraph %s {\n", indent, strconv.Quote("cluster_"+id))
		fmt.Fprintf(b, "%s  label=%s;\n", indent, strconv.Quote(n.ID+" ("+n.Type+")"))
		dotNode(b, indent+"  ", id, n)
		dotScope(b, n.Child, id+"/", indent+"  ")
		for _, c := range n.Child.Nodes {
			if len(c.Needs) == 0 {
				fmt.Fprintf(b, "%s  %s -> %s [style=dotted];\n", indent, strconv.Quote(id), strconv.Quote(id+"/"+c.ID))
			}
		}
		fmt.Fprintf(b, "%s}\n", indent)
	}
	for _, n := range g.Nodes {
		for _, need := range n.Needs {
			attr := ""
			if n.When != "" {
				attr = " [style=dashed]"
			}
			fmt.Fprintf(b, "%s%s -> %s%s;\n", indent, strconv.Quote(prefix+need), strconv.Quote(prefix+n.ID), attr)
		}
	}
}
