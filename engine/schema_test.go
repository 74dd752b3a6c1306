package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/docs"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// serviceNodeTypes are the node types of the schema that call runtime
// services (models, toolsets, HTTP). Their kinds live with those services
// and may not be registered by New.
var serviceNodeTypes = []string{"model", "agent", "tool", "http", "code"}

// coreNodeTypes are the node types New must register itself.
var coreNodeTypes = []string{"set", "fail", "map", "workflow"}

// wtSchema is docs/workflow.schema.json decoded as plain JSON, for tests that
// read its structure.
type wtSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Defs       map[string]struct {
		Properties map[string]json.RawMessage `json:"properties"`
		AllOf      []struct {
			If struct {
				Properties struct {
					Type struct {
						Const string `json:"const"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"if"`
			Then struct {
				Properties struct {
					With struct {
						Ref string `json:"$ref"`
					} `json:"with"`
				} `json:"properties"`
			} `json:"then"`
		} `json:"allOf"`
	} `json:"$defs"`
}

func wtLoadSchema(t *testing.T) wtSchema {
	t.Helper()
	var s wtSchema
	if err := json.Unmarshal(docs.WorkflowSchema, &s); err != nil {
		t.Fatalf("docs/workflow.schema.json: %v", err)
	}
	return s
}

// schemaNodeTypes lists the node types with an if/then entry in the schema,
// each with the $defs name of its with.
func (s wtSchema) nodeTypes(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, a := range s.Defs["node"].AllOf {
		typ, ref := a.If.Properties.Type.Const, a.Then.Properties.With.Ref
		def, ok := strings.CutPrefix(ref, "#/$defs/")
		if typ == "" || !ok {
			t.Fatalf("$defs.node.allOf[%d]: want if type const / then with $ref, got %q %q", i, typ, ref)
		}
		if _, dup := out[typ]; dup {
			t.Fatalf("node type %q has two if/then entries", typ)
		}
		out[typ] = def
	}
	return out
}

// TestSchemaIsWhatValidationUses compiles docs/workflow.schema.json on its
// own and checks that Prepare agrees with it on every document: accepted
// when the schema accepts, a 400 at the schema's instance path when not.
func TestSchemaIsWhatValidationUses(t *testing.T) {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs.WorkflowSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("workflow.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("workflow.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		wf   string
		path string // "" when the document is valid
	}{
		{"minimal", `{"nodes":[]}`, ""},
		{"every node field", `{"id":"w","version":1,"name":"n","description":"d","input":{"type":"object"},"nodes":[
			{"id":"a","type":"set","name":"A","description":"D","with":{"value":1},"retry":{"maxAttempts":2,"backoffMs":0,"factor":1.5,"maxBackoffMs":0},"timeoutMs":5,"onError":"continue"},
			{"id":"b","type":"fail","needs":["a"],"when":"true","with":{"message":"m","code":"MY_CODE"}}],"output":{"x":1}}`, ""},
		{"nodes missing", `{"id":"w"}`, "workflow"},
		{"unknown top-level field", `{"nodes":[],"extra":1}`, "workflow"},
		{"version 2", `{"version":2,"nodes":[]}`, "workflow.version"},
		{"bad node id", `{"nodes":[{"id":"1a","type":"set"}]}`, "workflow.nodes[0].id"},
		{"node without type", `{"nodes":[{"id":"a"}]}`, "workflow.nodes[0]"},
		{"unknown node field", `{"nodes":[{"id":"a","type":"set","retries":3}]}`, "workflow.nodes[0]"},
		{"needs not unique", `{"nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["a","a"]}]}`, "workflow.nodes[1].needs"},
		{"empty when", `{"nodes":[{"id":"a","type":"set","when":""}]}`, "workflow.nodes[0].when"},
		{"onError unknown", `{"nodes":[{"id":"a","type":"set","onError":"ignore"}]}`, "workflow.nodes[0].onError"},
		{"timeoutMs zero", `{"nodes":[{"id":"a","type":"set","timeoutMs":0}]}`, "workflow.nodes[0].timeoutMs"},
		{"maxAttempts over 10", `{"nodes":[{"id":"a","type":"set","retry":{"maxAttempts":11}}]}`, "workflow.nodes[0].retry.maxAttempts"},
		{"factor under 1", `{"nodes":[{"id":"a","type":"set","retry":{"factor":0.5}}]}`, "workflow.nodes[0].retry.factor"},
		{"set with an unknown field", `{"nodes":[{"id":"a","type":"set","with":{"val":1}}]}`, "workflow.nodes[0].with"},
		{"fail code not UPPER_SNAKE", `{"nodes":[{"id":"a","type":"fail","with":{"code":"oops"}}]}`, "workflow.nodes[0].with.code"},
		{"map without with", `{"nodes":[{"id":"a","type":"map"}]}`, "workflow.nodes[0]"},
		{"map inner node invalid", `{"nodes":[{"id":"a","type":"map","with":{"items":[1],"nodes":[{"id":"b","type":"set","timeoutMs":-1}]}}]}`, "workflow.nodes[0].with.nodes[0].timeoutMs"},
		{"workflow without with.workflow", `{"nodes":[{"id":"a","type":"workflow","with":{}}]}`, "workflow.nodes[0].with"},
		{"model temperature not a number", `{"nodes":[{"id":"a","type":"model","with":{"prompt":"p","temperature":"hot"}}]}`, "workflow.nodes[0].with.temperature"},
		{"tool without tool", `{"nodes":[{"id":"a","type":"tool","with":{"toolset":"t"}}]}`, "workflow.nodes[0].with"},
		{"http without url", `{"nodes":[{"id":"a","type":"http","with":{"method":"GET"}}]}`, "workflow.nodes[0].with"},
		{"http responseType unknown", `{"nodes":[{"id":"a","type":"http","with":{"url":"https://x","responseType":"xml"}}]}`, "workflow.nodes[0].with.responseType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.wf))
			if err != nil {
				t.Fatal(err)
			}
			schemaErr := sch.Validate(inst)
			if (schemaErr == nil) != (tt.path == "") {
				t.Fatalf("the schema itself says %v, want valid=%v", schemaErr, tt.path == "")
			}
			e, _ := wtEngine(nil)
			req := wtReq(t, tt.wf, "{}")
			if tt.path == "" {
				// Service node types may be missing from this engine; the
				// schema must not be what refuses the document.
				if _, err := e.Prepare(req); err != nil {
					for _, d := range err.(*protocol.Invalid).Details {
						if !strings.HasSuffix(d.Path, ".type") {
							t.Errorf("valid document refused: %s", d)
						}
					}
				}
				return
			}
			if d := wtInvalid(t, e, req); !wtHasDetail(d, tt.path) {
				t.Errorf("details %s, want one at %s", wtJSON(d), tt.path)
			}
		})
	}
}

// TestSchemaNodeTypes keeps the schema's per-type rules and the engine's
// kinds in step: every type with an if/then entry is registered or is a
// service node type; the core types are registered and have an entry; no
// type the stateless runner refuses has one.
func TestSchemaNodeTypes(t *testing.T) {
	s := wtLoadSchema(t)
	types := s.nodeTypes(t)
	registered := New(DefaultLimits()).NodeTypes()
	for typ, def := range types {
		if !slices.Contains(registered, typ) && !slices.Contains(serviceNodeTypes, typ) {
			t.Errorf("schema node type %q has no registered kind and is not a service node type", typ)
		}
		if _, stateless := statelessOnly[typ]; stateless {
			t.Errorf("schema node type %q is refused as stateless", typ)
		}
		if _, ok := s.Defs[def]; !ok {
			t.Errorf("schema node type %q refers to missing $defs.%s", typ, def)
		}
	}
	for _, typ := range append(slices.Clone(coreNodeTypes), serviceNodeTypes...) {
		if _, ok := types[typ]; !ok {
			t.Errorf("node type %q has no if/then entry in the schema", typ)
		}
	}
	for _, typ := range coreNodeTypes {
		if !slices.Contains(registered, typ) {
			t.Errorf("core node type %q is not registered by New", typ)
		}
	}
	for _, typ := range registered {
		if _, ok := types[typ]; !ok {
			t.Errorf("registered node type %q has no if/then entry in the schema", typ)
		}
	}
}

// TestStatelessRefusal checks that node types needing server checkpoints or
// persistent values are a 400 naming the node and the missing service,
// wherever they appear.
func TestStatelessRefusal(t *testing.T) {
	tests := []struct {
		typ, service string
	}{
		{"wait", "checkpoint service"},
		{"sleep", "checkpoint service"},
		{"approval", "checkpoint service"},
		{"checkpoint", "checkpoint service"},
		{"value.get", "persistent-value service"},
		{"value.set", "persistent-value service"},
		{"value.delete", "persistent-value service"},
		{"value.list", "persistent-value service"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			e, _ := wtEngine(nil)
			node := fmt.Sprintf(`{"id":"n_%s","type":%q,"with":{}}`, strings.ReplaceAll(tt.typ, ".", "_"), tt.typ)
			id := fmt.Sprintf("%q", "n_"+strings.ReplaceAll(tt.typ, ".", "_"))
			places := []struct {
				wf       string
				children []string
				path     string
			}{
				{`{"nodes":[{"id":"a","type":"set"},` + node + `]}`, nil, "workflow.nodes[1].type"},
				{`{"nodes":[{"id":"m","type":"map","with":{"items":[1],"nodes":[` + node + `]}}]}`, nil, "workflow.nodes[0].with.nodes[0].type"},
				{`{"nodes":[]}`, []string{`{"id":"c","nodes":[` + node + `]}`}, "runtime.workflows[0].nodes[0].type"},
			}
			for _, p := range places {
				d := wtInvalid(t, e, wtReq(t, p.wf, "", p.children...))
				if !wtHasDetail(d, p.path, id, tt.service, "stateless") {
					t.Errorf("details %s, want one at %s naming %s and the %s", wtJSON(d), p.path, id, tt.service)
				}
			}
		})
	}
}

// TestWorkflowsDocCoversSchema keeps docs/workflows.md complete: every node
// type, every node and with field of the schema, every retry field, every
// error code, and every refused stateless type is documented.
func TestWorkflowsDocCoversSchema(t *testing.T) {
	b, err := os.ReadFile("../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	s := wtLoadSchema(t)
	mention := func(what, name string) {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/workflows.md does not mention %s `%s`", what, name)
		}
	}
	for typ, def := range s.nodeTypes(t) {
		heading := regexp.MustCompile("(?m)^#+ .*`" + regexp.QuoteMeta(typ) + "`")
		if !heading.MatchString(doc) {
			t.Errorf("docs/workflows.md has no heading for node type `%s`", typ)
		}
		for field := range s.Defs[def].Properties {
			mention(typ+" field", field)
		}
	}
	for field := range s.Properties {
		mention("document field", field)
	}
	for field := range s.Defs["node"].Properties {
		mention("node field", field)
	}
	for field := range s.Defs["retry"].Properties {
		mention("retry field", field)
	}
	for _, code := range []protocol.Code{
		protocol.CodeFailed, protocol.CodeExpressionError, protocol.CodeTimeout, protocol.CodeDeadlineExceeded,
		protocol.CodeCancelled, protocol.CodePermissionDenied, protocol.CodeModelError, protocol.CodeToolError,
		protocol.CodeHTTPBlocked, protocol.CodeHTTPError, protocol.CodeOutputTooLarge,
		protocol.CodeMemoryBudgetExceeded, protocol.CodeLimitExceeded, protocol.CodeExecutionFailed,
		protocol.CodeInvalidExecution,
	} {
		mention("error code", string(code))
	}
	for typ := range statelessOnly {
		mention("stateless node type", typ)
	}
	for _, limit := range []string{"maxNodes", "maxConcurrency", "maxMapItems", "maxChildDepth", "maxEventBytes", "$truncated"} {
		mention("limit", limit)
	}
}
