package engine_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"testing"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/protocol"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/authoring/golden.jsonl.gz from the engine as built")

// TestAuthoring400Golden holds what a request is told about its workflow —
// the 400 body, byte for byte, and Validate's problems for the bare
// document — over a frozen corpus of authored documents and their
// mutations (testdata/authoring/corpus.jsonl.gz: every document the tests,
// examples and conformance cases held, each member removed, retyped and
// added to). Moving the checks between packages must not change a byte.
func TestAuthoring400Golden(t *testing.T) {
	docs := readLines(t, "testdata/authoring/corpus.jsonl.gz")
	if len(docs) < 10_000 {
		t.Fatalf("corpus holds %d documents", len(docs))
	}
	eng := engine.New(engine.DefaultLimits())
	got := make([][]byte, len(docs))
	for i, doc := range docs {
		got[i] = authoringOutcome(t, eng, doc)
	}
	const golden = "testdata/authoring/golden.jsonl.gz"
	if *updateGolden {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		for _, g := range got {
			zw.Write(g)
			zw.Write([]byte{'\n'})
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readLines(t, golden)
	if len(want) != len(docs) {
		t.Fatalf("golden holds %d outcomes for %d documents", len(want), len(docs))
	}
	bad := 0
	for i := range docs {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("document %s\n got %s\nwant %s", docs[i], got[i], want[i])
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
}

// authoringOutcome is one line: the 400 body of the document sent as a
// request (null when accepted) and Validate's problems for it bare.
func authoringOutcome(t *testing.T, eng *engine.Engine, doc []byte) []byte {
	body := append(append([]byte(`{"version":1,"workflow":`), doc...), '}')
	var resp any
	_, err := eng.PrepareBody(body)
	var inv *protocol.Invalid
	switch {
	case err == nil:
	case errors.As(err, &inv):
		resp = inv.Response()
	default:
		t.Fatalf("document %s: %v", doc, err)
	}
	b, err := json.Marshal(struct {
		Body     any              `json:"body"`
		Problems []engine.Problem `json:"problems"`
	}{resp, eng.Validate(doc)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readLines(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(all))
	sc.Buffer(nil, 16<<20)
	var out [][]byte
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}
