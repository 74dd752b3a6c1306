package protocol

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

var testCapabilities = Capabilities{
	Version:          Version,
	ProtocolVersions: []int{1},
	Runner:           RunnerInfo{Name: "lambda-runner", Version: "0.1.0"},
	NodeTypes:        []string{"set", "map", "workflow", "model", "agent", "tool", "http", "fail"},
	Runtime: RuntimeCapabilities{
		Models:    ModelCapabilities{Providers: []string{"openai", "anthropic", "bedrock"}, Roles: []string{"general"}},
		Toolsets:  ToolsetCapabilities{Transports: []string{"streamable-http"}},
		Workflows: true,
		HTTP:      true,
		Consent:   "suspend",
	},
	Streaming: Streaming{ContentType: ContentTypeNDJSON},
	Constraints: Constraints{
		MaxDurationMs:          890000,
		MemoryMb:               1024,
		MaxRequestBytes:        6291456,
		MaxNodes:               200,
		MaxConcurrency:         8,
		MaxMapItems:            1000,
		MaxChildDepth:          4,
		MaxDepth:               128,
		MaxSchemaDepth:         32,
		MaxSchemaBytes:         65536,
		MaxExpressions:         20000,
		MaxEventBytes:          262144,
		MaxStreamBytes:         20971520,
		MaxBufferedStreamBytes: 6225920,
		MaxOutputBytes:         1048576,
		MemoryBudget:           536870912,
		MaxExprSteps:           10000000,
		MaxExprMemory:          16777216,
		MaxCodeBytes:           65536,
		MaxCodeMemory:          67108864,
		MaxCodeLogBytes:        65536,
		MaxExecutions:          3,
	},
}

func TestCapabilitiesBytes(t *testing.T) {
	want := `{"version":1,"protocolVersions":[1],` +
		`"runner":{"name":"lambda-runner","version":"0.1.0"},` +
		`"nodeTypes":["set","map","workflow","model","agent","tool","http","fail"],` +
		`"runtime":{"models":{"providers":["openai","anthropic","bedrock"],"roles":["general"]},` +
		`"toolsets":{"transports":["streamable-http"]},` +
		`"workflows":true,"http":true,"checkpoints":false,"persistentValues":false,"consent":"suspend"},` +
		`"streaming":{"contentType":"application/x-ndjson"},` +
		`"constraints":{"maxDurationMs":890000,"memoryMb":1024,"maxRequestBytes":6291456,"maxNodes":200,` +
		`"maxConcurrency":8,"maxMapItems":1000,"maxChildDepth":4,"maxDepth":128,"maxSchemaDepth":32,"maxSchemaBytes":65536,"maxExpressions":20000,"maxEventBytes":262144,` +
		`"maxStreamBytes":20971520,"maxBufferedStreamBytes":6225920,` +
		`"maxOutputBytes":1048576,"memoryBudgetBytes":536870912,"maxExprSteps":10000000,"maxExprMemoryBytes":16777216,"maxFanOutInvocations":0,` +
		`"maxCodeBytes":65536,"maxCodeMemoryBytes":67108864,"maxCodeLogBytes":65536,"maxExecutions":3}}`
	if got := marshal(t, testCapabilities); got != want {
		t.Errorf("capabilities bytes mismatch\n got: %s\nwant: %s", got, want)
	}
}

// TestCapabilitiesKeys pins the key names of every object in the document,
// so that a renamed or dropped field reads plainly in the failure.
func TestCapabilitiesKeys(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(marshal(t, testCapabilities)), &doc); err != nil {
		t.Fatal(err)
	}
	rt := member(t, doc, "runtime")
	tests := []struct {
		path string
		obj  map[string]any
		want []string
	}{
		{"(top)", doc, []string{"version", "protocolVersions", "runner", "nodeTypes", "runtime", "streaming", "constraints"}},
		{"runner", member(t, doc, "runner"), []string{"name", "version"}},
		{"runtime", rt, []string{"models", "toolsets", "workflows", "http", "checkpoints", "persistentValues", "consent"}},
		{"runtime.models", member(t, rt, "models"), []string{"providers", "roles"}},
		{"runtime.toolsets", member(t, rt, "toolsets"), []string{"transports"}},
		{"streaming", member(t, doc, "streaming"), []string{"contentType"}},
		{"constraints", member(t, doc, "constraints"), []string{
			"maxDurationMs", "memoryMb", "maxRequestBytes", "maxNodes", "maxConcurrency",
			"maxMapItems", "maxChildDepth", "maxDepth", "maxSchemaDepth", "maxSchemaBytes", "maxExpressions", "maxEventBytes", "maxStreamBytes", "maxBufferedStreamBytes", "maxOutputBytes", "memoryBudgetBytes",
			"maxExprSteps", "maxExprMemoryBytes", "maxFanOutInvocations", "maxCodeBytes", "maxCodeMemoryBytes", "maxCodeLogBytes", "maxExecutions",
		}},
	}
	for _, tt := range tests {
		got := slices.Sorted(maps.Keys(tt.obj))
		want := slices.Sorted(slices.Values(tt.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s keys = %q, want %q", tt.path, got, want)
		}
	}
}

// TestCapabilitiesZeroValue checks that nothing is omitted: a runner without
// a service says false or 0, and empty lists are still keys.
func TestCapabilitiesZeroValue(t *testing.T) {
	want := `{"version":0,"protocolVersions":null,"runner":{"name":"","version":""},"nodeTypes":null,` +
		`"runtime":{"models":{"providers":null,"roles":null},"toolsets":{"transports":null},` +
		`"workflows":false,"http":false,"checkpoints":false,"persistentValues":false,"consent":""},` +
		`"streaming":{"contentType":""},` +
		`"constraints":{"maxDurationMs":0,"memoryMb":0,"maxRequestBytes":0,"maxNodes":0,"maxConcurrency":0,` +
		`"maxMapItems":0,"maxChildDepth":0,"maxDepth":0,"maxSchemaDepth":0,"maxSchemaBytes":0,"maxExpressions":0,"maxEventBytes":0,"maxStreamBytes":0,"maxBufferedStreamBytes":0,"maxOutputBytes":0,"memoryBudgetBytes":0,"maxExprSteps":0,"maxExprMemoryBytes":0,"maxFanOutInvocations":0,` +
		`"maxCodeBytes":0,"maxCodeMemoryBytes":0,"maxCodeLogBytes":0,"maxExecutions":0}}`
	if got := marshal(t, Capabilities{}); got != want {
		t.Errorf("zero capabilities bytes mismatch\n got: %s\nwant: %s", got, want)
	}
}

// member returns m[key], which must be a JSON object.
func member(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("%q is %T, want an object", key, m[key])
	}
	return o
}
