package main

import (
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestImportDirection keeps the packages layered as docs/architecture.md
// draws them: protocol at the bottom on the standard library alone (its
// subpackages, such as protocol/redact, likewise), the expression language
// (engine/lang) and the adapters (engine/models, engine/toolsets, engine/egress,
// engine/permission, infra/*) below the engine, and nothing but this
// command above functions. Dependencies are transitive, so a detour
// through another package is caught too.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "github.com/runnerd/lambda-runner/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/runnerd/lambda-runner/"
	adapters := []string{"engine/lang", "engine/models", "engine/toolsets", "engine/egress", "engine/permission", "engine/sandbox", "infra/"}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := strings.TrimPrefix(fields[0], mod), fields[1:]
		// The JavaScript runtime is the sandbox worker's alone: only the
		// worker package and the codeworker command link it, so that the
		// bootstrap (functions/runner) does not (goja's parser alone,
		// engine/sandbox's syntax check, is not the runtime).
		worker := pkg == "engine/sandbox/worker" || pkg == "functions/codeworker"
		if !worker && slices.Contains(deps, "github.com/dop251/goja") {
			t.Errorf("%s links github.com/dop251/goja: only engine/sandbox/worker and functions/codeworker may", pkg)
		}
		if !worker && slices.Contains(deps, mod+"engine/sandbox/worker") {
			t.Errorf("%s imports engine/sandbox/worker: only functions/codeworker (and tests) may", pkg)
		}
		// service/lambda is pinned at v1.108.0, the last release whose
		// client does not link its schemas package (1.3-1.7 ms of every
		// cold start, for a client only distributed maps build):
		// bench/BASELINE.md, Round 5. An upgrade that brings it back
		// fails here.
		if pkg == "functions/runner" && slices.Contains(deps, "github.com/aws/aws-sdk-go-v2/service/lambda/schemas") {
			t.Errorf("%s links aws-sdk-go-v2/service/lambda/schemas: keep service/lambda at a release without it (go.mod)", pkg)
		}
		forbid := func(why string, bad func(dep string) bool) {
			for _, d := range deps {
				if bad(d) {
					t.Errorf("%s imports %s: %s", pkg, d, why)
				}
			}
		}
		switch {
		case pkg == "protocol" || strings.HasPrefix(pkg, "protocol/"):
			// Its own subpackages are held to the same rule where they
			// are checked themselves, so a detour through them is caught.
			forbid("protocol uses the standard library only", func(d string) bool {
				return strings.Contains(strings.Split(d, "/")[0], ".") && !strings.HasPrefix(d, mod+"protocol/")
			})
		case slices.ContainsFunc(adapters, func(a string) bool {
			return pkg == a || strings.HasPrefix(pkg, a+"/") || strings.HasSuffix(a, "/") && strings.HasPrefix(pkg, a)
		}):
			forbid("the language and the adapters sit below the engine", func(d string) bool {
				return d == mod+"engine" || d == mod+"functions" || strings.HasPrefix(d, mod+"functions/")
			})
		case path.Dir(pkg) == "engine" || pkg == "engine":
			forbid("the engine sits below functions and infra", func(d string) bool {
				return strings.HasPrefix(d, mod+"functions") || strings.HasPrefix(d, mod+"infra/")
			})
		default:
			continue
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("checked %d packages: go list output not understood:\n%s", checked, out)
	}
}
