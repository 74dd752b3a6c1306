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

// mermaidEsc encodes what would end a quoted label or open markup as
// Mermaid's entity codes. '#' is encoded too: Mermaid decodes "#lt;" in a
// label to "<", so a document's own "#lt;img …#gt;" would become markup.
var mermaidEsc = strings.NewReplacer("#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;")

// mermaidLabel quotes a label; Mermaid takes entity codes inside quotes.
// Control characters are dropped: the text is the document's, and the
// output goes to a terminal as often as to a file.
func mermaidLabel(n *Node) string {
	esc := func(s string) string { return mermaidEsc.Replace(dropControls(s)) }
	lines := []string{"<b>" + esc(n.ID) + "</b>"}
	for _, s := range n.notes() {
		lines = append(lines, esc(s))
	}
	return `"` + strings.Join(lines, "<br/>") + `"`
}

// dropControls removes C0 and C1 control characters and DEL.
func dropControls(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return -1
		}
		return r
	}, s)
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
