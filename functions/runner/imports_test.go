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
// (engine/lang), the adapters (engine/models, engine/toolsets, engine/egress,
// engine/permission, infra/*) and the rooms taken out of the engine
// (engine/document, engine/secrets, engine/authorjson, engine/plancache,
// engine/distribute, engine/batch, engine/services, engine/limits,
// engine/dag) below the engine, and nothing but this command above
// functions. Dependencies are transitive, so a detour
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
		// worker package and the codeworker command link it. The
		// bootstrap (functions/runner) links no package of goja at all,
		// not even its parser: the syntax check before acceptance is
		// answered by a worker (engine/sandbox Pool.Check,
		// engine/sandbox/syntax), whose parser with its source maps and
		// Unicode tables cost 0.13 MB and 0.2 ms of every cold start.
		worker := pkg == "engine/sandbox/worker" || pkg == "functions/codeworker"
		if !worker && slices.Contains(deps, "github.com/dop251/goja") {
			t.Errorf("%s links github.com/dop251/goja: only engine/sandbox/worker and functions/codeworker may", pkg)
		}
		if pkg == "functions/runner" {
			forbidden := func(d string) bool {
				return strings.HasPrefix(d, "github.com/dop251/") || d == mod+"engine/sandbox/syntax" || d == "github.com/go-sourcemap/sourcemap"
			}
			if i := slices.IndexFunc(deps, forbidden); i >= 0 {
				t.Errorf("%s links %s: the bootstrap has its code nodes' syntax checked by a worker", pkg, deps[i])
			}
		}
		if !worker && slices.Contains(deps, mod+"engine/sandbox/worker") {
			t.Errorf("%s imports engine/sandbox/worker: only functions/codeworker (and tests) may", pkg)
		}
		// The AWS service clients are pinned at their last releases
		// before schema-based serialization, whose generated schemas
		// packages build every shape at package init (lambda 1.3-1.7 ms,
		// bedrockruntime 0.8-1.0 ms, secretsmanager 0.3 ms of every cold
		// start): bench/BASELINE.md, Round 5. An upgrade that brings one
		// back fails here.
		for _, svc := range []string{"lambda", "bedrockruntime", "secretsmanager"} {
			if s := "github.com/aws/aws-sdk-go-v2/service/" + svc + "/schemas"; pkg == "functions/runner" && slices.Contains(deps, s) {
				t.Errorf("%s links %s: keep service/%s at a release without it (go.mod)", pkg, s, svc)
			}
		}
		// The document check words its messages as the JSON Schema
		// validator's English printer does with a formatter of its own
		// (engine/document/format.go): x/text's message and
		// language packages cost the Bedrock-only bootstrap 0.4 MB and
		// their init runs in every cold start.
		for _, x := range []string{"golang.org/x/text/message", "golang.org/x/text/language"} {
			if pkg == "functions/runner" && slices.Contains(deps, x) {
				t.Errorf("%s links %s: the check's messages are formatted by engine/document.schemaSprintf", pkg, x)
			}
		}
		// Header names and values are checked by internal/httpfield:
		// golang.org/x/net/http/httpguts links x/net's idna and x/text's
		// bidi and norm tables, a second copy of net/http's vendored ones
		// (29 kB of the bootstrap), for two loops over bytes.
		if pkg == "functions/runner" && slices.Contains(deps, "golang.org/x/net/idna") {
			t.Errorf("%s links golang.org/x/net/idna: check header fields with internal/httpfield, not golang.org/x/net/http/httpguts", pkg)
		}
		// Spans leave as OTLP protobuf that infra/telemetry encodes
		// itself (otlpspans.go): the protobuf runtime and the generated
		// OTLP types, through the otlptrace exporter, cost every cold
		// start ≈0.6 ms of package init and the bootstrap 1.5 MB
		// (bench/BASELINE.md, Round 7). Only a TRACING=grpc build, whose
		// gRPC exporter needs them, links them.
		if pkg == "functions/runner" {
			for _, d := range deps {
				if strings.HasPrefix(d, "google.golang.org/protobuf/") || strings.HasPrefix(d, "go.opentelemetry.io/proto/") ||
					d == "go.opentelemetry.io/otel/exporters/otlp/otlptrace" {
					t.Errorf("%s links %s: infra/telemetry encodes OTLP itself", pkg, d)
				}
			}
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
		case pkg == "engine/document":
			forbid("the workflow document sits below the engine: it imports protocol, engine/lang and engine/schema only", func(d string) bool {
				return strings.HasPrefix(d, mod) && d != mod+"protocol" && !strings.HasPrefix(d, mod+"protocol/") &&
					!strings.HasPrefix(d, mod+"engine/lang") && !strings.HasPrefix(d, mod+"engine/schema")
			})
		case pkg == "engine/batch":
			forbid("the wire of a distributed map sits below the engine: it imports protocol and engine/secrets (with its engine/lang) only", func(d string) bool {
				return strings.HasPrefix(d, mod) && d != mod+"protocol" && !strings.HasPrefix(d, mod+"protocol/") &&
					d != mod+"engine/secrets" && !strings.HasPrefix(d, mod+"engine/lang")
			})
		case pkg == "engine/distribute":
			// The parent's side of a distributed map reaches the execution
			// through the interface it declares (distribute.Execution),
			// which the engine implements: never the engine itself.
			forbid("a distributed map's sending sits below the engine: it imports protocol, engine/batch, engine/secrets, engine/lang and engine/jsonweight only", func(d string) bool {
				return strings.HasPrefix(d, mod) && d != mod+"protocol" && !strings.HasPrefix(d, mod+"protocol/") &&
					d != mod+"engine/batch" && d != mod+"engine/secrets" && d != mod+"engine/jsonweight" && !strings.HasPrefix(d, mod+"engine/lang")
			})
		case pkg == "engine/services":
			// engine.Services is an alias of its Config: the engine reads
			// the services through it, never the other way round.
			forbid("the runtime services sit below the engine, beside the adapters they configure: they import neither the engine nor a kind", func(d string) bool {
				return d == mod+"engine" || d == mod+"engine/nodes" || strings.HasPrefix(d, mod+"functions") || strings.HasPrefix(d, mod+"infra/")
			})
		case pkg == "engine/dag":
			forbid("the graph algorithms use the standard library only", func(d string) bool {
				return strings.Contains(strings.Split(d, "/")[0], ".")
			})
		case pkg == "engine/limits":
			forbid("the limits sit below the engine: they read two constants of engine/models and engine/sandbox", func(d string) bool {
				return d == mod+"engine" || strings.HasPrefix(d, mod+"functions") || strings.HasPrefix(d, mod+"infra/") ||
					d == mod+"engine/nodes" || d == mod+"engine/document"
			})
		case slices.Contains([]string{"engine/secrets", "engine/authorjson", "engine/plancache"}, pkg):
			// The rooms the engine was taken apart into hold pure parts:
			// each below the engine and every node kind.
			forbid("the engine's pure rooms sit below it: they import no engine package but engine/lang and engine/secrets", func(d string) bool {
				return strings.HasPrefix(d, mod+"engine") && d != mod+"engine/lang" && !strings.HasPrefix(d, mod+"engine/lang/") && d != mod+"engine/secrets" ||
					strings.HasPrefix(d, mod+"functions") || strings.HasPrefix(d, mod+"infra/")
			})
		case pkg == "engine/nodes":
			forbid("the node kinds are written against the engine's API and sit above it, below functions", func(d string) bool {
				return strings.HasPrefix(d, mod+"functions") || strings.HasPrefix(d, mod+"infra/")
			})
		case path.Dir(pkg) == "engine" || pkg == "engine":
			forbid("the engine sits below functions and infra", func(d string) bool {
				return strings.HasPrefix(d, mod+"functions") || strings.HasPrefix(d, mod+"infra/")
			})
			// Only engine/nodes (and a bundle or main above it) imports a kind.
			forbid("the node kinds (engine/nodes) register themselves with the engine, which never imports them", func(d string) bool {
				return d == mod+"engine/nodes"
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
