package graph_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/graph"
)

// FuzzParse: any input parses or errors, and what parses draws, without
// panics.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../../../examples/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"nodes":[{"id":"m","type":"map","with":{"nodes":"x"}}]}`))
	f.Add([]byte(`{"workflow":{"nodes":[{"id":"w","type":"workflow","with":{"workflow":1}}]},"runtime":{"workflows":[{}]}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		g, err := graph.Parse(src)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := graph.Mermaid(&b, g); err != nil {
			t.Fatal(err)
		}
		if err := graph.DOT(&b, g); err != nil {
			t.Fatal(err)
		}
	})
}
