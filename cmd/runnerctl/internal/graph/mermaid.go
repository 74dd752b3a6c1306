package graph

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_]`)

// Mermaid writes g as a Mermaid flowchart.
func Mermaid(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	mermaidScope(&b, g, "", "  ")
	_, err := io.WriteString(w, b.String())
	return err
}

func mermaidID(prefix, id string) string { return prefix + unsafeID.ReplaceAllString(id, "_") }

// mermaidLabel quotes a label; Mermaid takes entity codes inside quotes.
func mermaidLabel(n *Node) string {
	esc := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;")
	lines := []string{"<b>" + esc.Replace(n.ID) + "</b>"}
	for _, s := range n.notes() {
		lines = append(lines, esc.Replace(s))
	}
	return `"` + strings.Join(lines, "<br/>") + `"`
}

func mermaidScope(b *strings.Builder, g *Graph, prefix, indent string) {
	for _, n := range g.Nodes {
		id := mermaidID(prefix, n.ID)
		if n.Child != nil {
			fmt.Fprintf(b, "%ssubgraph %s[%s]\n", indent, id, mermaidLabel(n))
			mermaidScope(b, n.Child, id+"__", indent+"  ")
			fmt.Fprintf(b, "%send\n", indent)
			continue
		}
		fmt.Fprintf(b, "%s%s[%s]\n", indent, id, mermaidLabel(n))
	}
	for _, n := range g.Nodes {
		for _, need := range n.Needs {
			arrow := "-->"
			if n.When != "" {
				arrow = "-.->" // a conditional node: the edge may not be taken
			}
			fmt.Fprintf(b, "%s%s %s %s\n", indent, mermaidID(prefix, need), arrow, mermaidID(prefix, n.ID))
		}
	}
}
