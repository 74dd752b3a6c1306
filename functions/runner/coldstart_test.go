package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestGCTargetSetBeforeHeavyInit checks, in the built bootstrap, that
// infra/gcstart raises the GC target before the packages that allocate
// most at init run theirs: otherwise a collection runs during every cold
// start (bench/BASELINE.md).
func TestGCTargetSetBeforeHeavyInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bootstrap")
	}
	cmd := exec.Command(bootstrapPath(t), "-version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bootstrap -version: %v\n%s", err, out)
	}
	order := map[string]int{}
	for i, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" {
			order[f[1]] = i
		}
	}
	gc, ok := order["github.com/runnerd/lambda-runner/infra/gcstart"]
	if !ok {
		t.Fatalf("infra/gcstart did not initialise (not imported?):\n%s", out)
	}
	for _, heavy := range []string{
		"github.com/google/jsonschema-go/jsonschema",
		"github.com/openai/openai-go/v3",
		"github.com/modelcontextprotocol/go-sdk/mcp",
	} {
		if i, ok := order[heavy]; ok && i < gc {
			t.Errorf("%s initialises before infra/gcstart", heavy)
		}
	}
	// Requests' JSON Schemas are compiled by engine/schema over
	// google/jsonschema-go; santhosh-tekuri/jsonschema, whose init compiled
	// five drafts' meta-schemas (7.5-8 ms of every cold start), is a test
	// oracle only and must not be linked.
	if _, ok := order["github.com/santhosh-tekuri/jsonschema/v6"]; ok {
		t.Errorf("santhosh-tekuri/jsonschema is linked into the bootstrap")
	}
}
