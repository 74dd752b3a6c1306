package graph_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/graph"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestExamplesGolden draws every example as Mermaid and DOT and compares
// with testdata (go test -update rewrites them).
func TestExamplesGolden(t *testing.T) {
	files, err := filepath.Glob("../../../../examples/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range []struct {
			ext  string
			draw func(*bytes.Buffer, *graph.Graph) error
		}{
			{"mmd", func(b *bytes.Buffer, g *graph.Graph) error { return graph.Mermaid(b, g) }},
			{"dot", func(b *bytes.Buffer, g *graph.Graph) error { return graph.DOT(b, g) }},
		} {
			var b bytes.Buffer
			if err := r.draw(&b, g); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+"."+r.ext)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s differs:\n%s", golden, b.String())
			}
		}
	}
}

func TestShapes(t *testing.T) {
	src := `{"nodes":[
	 {"id":"a","type":"set","with":{"value":1}},
	 {"id":"b\"x","type":"set","needs":["a"],"when":"${{ nodes.a.output > 0 }}","with":{"value":2}},
	 {"id":"m","type":"map","needs":["a"],"onError":"continue","with":{"items":[1],"nodes":[{"id":"i","type":"set","with":{"value":1}}]}},
	 {"id":"self","type":"workflow","with":{"workflow":"loop"}}]}`
	g, err := graph.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var m, d bytes.Buffer
	graph.Mermaid(&m, g)
	graph.DOT(&d, g)
	for _, want := range []string{"a -.-> b_x", "#quot;", "when: ${{ nodes.a.output #gt; 0 }}", "subgraph m[", "m__i[", "onError: continue", "a --> m", "workflow loop"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m.String())
		}
	}
	for _, want := range []string{`subgraph "cluster_m"`, `"m/i"`, `"a" -> "b\"x" [style=dashed]`, `style=dashed`} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("dot lacks %q:\n%s", want, d.String())
		}
	}
	if _, err := graph.Parse([]byte(`{"id":"x"}`)); err == nil {
		t.Error("a document without nodes parsed")
	}
}

func TestChildWorkflowsThatRecurseAreBounded(t *testing.T) {
	src := `{"version":1,"workflow":{"nodes":[{"id":"r","type":"workflow","with":{"workflow":"loop"}}]},
	 "runtime":{"workflows":[{"id":"loop","nodes":[{"id":"again","type":"workflow","with":{"workflow":"loop"}}]}]}}`
	g, err := graph.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	graph.Mermaid(&b, g)
	if n := strings.Count(b.String(), "subgraph"); n != 8 {
		t.Errorf("%d subgraphs, want 8 (the depth bound)", n)
	}
}

// A child workflow run by k of its own nodes is drawn under each of them:
// k^maxDepth boxes. A 641-byte document (k = 8) took 26 s and ran out of
// 6 GB; the drawing is now bounded.
func TestRecursiveChildWorkflowsAreBounded(t *testing.T) {
	var calls []string
	for i := range 8 {
		calls = append(calls, `{"id":"c`+string(rune('0'+i))+`","type":"workflow","with":{"workflow":"w"}}`)
	}
	src := `{"version":1,"workflow":{"nodes":[{"id":"top","type":"workflow","with":{"workflow":"w"}}]},
		"runtime":{"workflows":[{"id":"w","nodes":[` + strings.Join(calls, ",") + `]}]}}`
	g, err := graph.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := graph.Mermaid(&b, g); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines > 20_000 {
		t.Errorf("%d lines of Mermaid for a %d-byte document", lines, len(src))
	}
}

// A label is the document's text: its control characters are dropped, and
// Mermaid's own entity codes written in it stay text.
func TestMermaidLabelsStayText(t *testing.T) {
	g, err := graph.Parse([]byte("{\"nodes\":[{\"id\":\"a\",\"type\":\"set\\u001b]0;owned\\u0007\",\"when\":\"#lt;img src=x onerror=alert(1)#gt;\"}]}"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := graph.Mermaid(&b, g); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters in %q", out)
	}
	if strings.Contains(out, "#lt;img") || !strings.Contains(out, "#35;lt;img") {
		t.Errorf("an entity code of the document passes as Mermaid's: %q", out)
	}
}
