package wftest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamples runs the repository's own examples' cases (make test):
// every request in examples/ has at least one, and each passes.
func TestExamples(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "examples")
	reqs, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	files, err := Find([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range reqs {
		if strings.HasSuffix(req, ".test.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(req), ".json")
		found := false
		for _, f := range files {
			found = found || strings.HasPrefix(filepath.Base(f), name+".")
		}
		if !found {
			t.Errorf("%s has no test case (examples/tests/%s.test.json)", req, name)
		}
	}
	worker := os.Getenv("RUNNER_TEST_CODE_WORKER")
	if worker == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("RUNNER_TEST_CODE_WORKER is unset under CI: make test builds the code worker")
		}
		t.Log("RUNNER_TEST_CODE_WORKER unset: skipping the code example's case (make test runs it)")
		kept := files[:0]
		for _, f := range files {
			if filepath.Base(f) != "code.test.json" {
				kept = append(kept, f)
			}
		}
		files = kept
	}
	var out bytes.Buffer
	code := Run(context.Background(), &out, files, Options{CodeWorker: worker})
	t.Log("\n" + out.String())
	if code != ExitPass {
		t.Fatalf("runnerctl test examples/: exit %d\n%s", code, out.String())
	}
}
