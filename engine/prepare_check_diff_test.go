package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/runnerd/lambda-runner/docs"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The hand-written document checks (prepare_check*.go) and the published
// schema (docs/workflow.schema.json, run by the JSON Schema library) must
// agree: same decision, same details (paths and messages, in order, the
// checks' "did you mean" aside), same paths covered for the later checks.

var (
	dsLibOnce   sync.Once
	dsLibSchema *jsonschema.Schema
	dsLibErr    error
)

// dsLibrarySchema compiles docs/workflow.schema.json with the library.
func dsLibrarySchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	dsLibOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(docs.WorkflowSchema))
		if err != nil {
			dsLibErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("workflow.schema.json", doc); err != nil {
			dsLibErr = err
			return
		}
		dsLibSchema, dsLibErr = c.Compile("workflow.schema.json")
	})
	if dsLibErr != nil {
		t.Fatalf("compile docs/workflow.schema.json: %v", dsLibErr)
	}
	return dsLibSchema
}

// dsOutcome is what a schema check reports: details and covered paths.
type dsOutcome struct {
	details []string
	covered []string
}

func dsReport(leaves []schemaLeaf) dsOutcome {
	// The library has no "did you mean": the checks' near misses are
	// left out of the comparison (TestDocNearMisses holds them).
	for i := range leaves {
		leaves[i].near = nil
	}
	d := &detailList{}
	reportLeaves(leaves, d)
	var o dsOutcome
	for _, det := range d.inv.Details {
		o.details = append(o.details, det.Path+": "+det.Message)
	}
	for p := range d.covered {
		o.covered = append(o.covered, p)
	}
	sort.Strings(o.covered)
	return o
}

// dsCompare runs both checks over raw; ok is false when raw is not JSON.
func dsCompare(t testing.TB, raw []byte) (agree bool, lib, own dsOutcome, ok bool) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return true, lib, own, false
	}
	doc, err := decodeDocument(raw, 0)
	if err != nil {
		t.Fatalf("library decodes %s, decodeDocument does not: %v", raw, err)
	}
	verr, panicked := dsLibraryValidate(t, inst)
	if panicked {
		// The library compares a minimum with a number math/big cannot
		// parse by dereferencing nil: there is no verdict to agree with.
		return true, lib, own, false
	}
	if verr != nil {
		leaves, isVE := schemaLeaves("workflow", verr)
		if !isVE {
			t.Fatalf("validation error %T: %v", verr, verr)
		}
		lib = dsReport(leaves)
	}
	own = dsReport(checkDocumentSchema("workflow", doc))
	agree = slices.Equal(lib.details, own.details) && slices.Equal(lib.covered, own.covered)
	return agree, lib, own, true
}

func dsLibraryValidate(t testing.TB, inst any) (err error, panicked bool) {
	sch := dsLibrarySchema(t)
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return sch.Validate(inst), false
}

func dsCheck(t testing.TB, name string, raw []byte) bool {
	t.Helper()
	agree, lib, own, ok := dsCompare(t, raw)
	if ok && !agree {
		t.Errorf("%s: %s\nlibrary: %q\n         covers %q\nchecks:  %q\n         covers %q", name, raw, lib.details, lib.covered, own.details, own.covered)
		return false
	}
	return true
}

// walkObjects calls visit on every object in v, v itself first.
func walkObjects(v any, visit func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(v)
		for _, e := range v {
			walkObjects(e, visit)
		}
	case []any:
		for _, e := range v {
			walkObjects(e, visit)
		}
	}
}

// dsHarvest collects workflow documents: examples/, and every JSON object
// with a "nodes" member in the string literals of the tests of engine,
// functions and conformance.
func dsHarvest(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	add := func(name string, v any) {
		walkObjects(v, func(m map[string]any) {
			if _, ok := m["nodes"]; ok {
				b, _ := json.Marshal(m)
				out[string(b)] = b
			}
		})
	}
	files, _ := filepath.Glob("../examples/*.json")
	literal := regexp.MustCompile("(?s)`(\\{.*?)`")
	for _, pattern := range []string{"*_test.go", "../functions/*_test.go", "../conformance/*.go"} {
		more, _ := filepath.Glob(pattern)
		files = append(files, more...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts := [][]byte{b}
		if strings.HasSuffix(f, ".go") {
			texts = nil
			for _, m := range literal.FindAllSubmatch(b, -1) {
				texts = append(texts, m[1])
			}
		}
		for _, text := range texts {
			var v any
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.UseNumber()
			if dec.Decode(&v) == nil {
				add(f, v)
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("harvested only %d documents", len(out))
	}
	return out
}

// dsValues replace a member's value in mutations: one of every JSON type,
// numbers at and around the schema's bounds, strings with and without a
// template.
var dsValues = []string{
	`null`, `true`, `false`, `0`, `-1`, `1`, `1.0`, `1.5`, `0.5`, `10`, `11`, `1e2`, `-0`, `1e400`, `2E-1`,
	`""`, `"x"`, `"1a"`, `"OK_CODE"`, `"${{ input.x }}"`, `"json"`, `"user"`,
	`[]`, `[1]`, `["a","a"]`, `["a",1]`, `[{"role":"user","content":"c"}]`, `[{"role":"x"}]`,
	`{}`, `{"x":1}`, `{"a":"b"}`, `{"0":1}`,
}

// dsMutations derives documents from raw: each member of each object
// removed, replaced by each of dsValues, and an extra member added.
func dsMutations(raw []byte) [][]byte {
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&root) != nil {
		return nil
	}
	var out [][]byte
	emit := func() {
		b, _ := json.Marshal(root)
		out = append(out, b)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				old := v[k]
				delete(v, k)
				emit()
				for _, r := range dsValues {
					v[k] = json.RawMessage(r)
					emit()
				}
				v[k] = old
				walk(old)
			}
			v["extra"] = 1
			emit()
			delete(v, "extra")
		case []any:
			for i, e := range v {
				walk(e)
				for _, r := range dsValues[:8] {
					v[i] = json.RawMessage(r)
					emit()
				}
				v[i] = e
			}
		}
	}
	walk(root)
	return out
}

// dsFullNodes are one node of each type with every with member set, and
// the same withs under a node without a type.
func dsFullNodes() []string {
	withs := map[string]string{
		"set":      `{"value":{"a":[1,2]}}`,
		"fail":     `{"message":"m","code":"E_X"}`,
		"map":      `{"items":[1,2],"concurrency":2,"nodes":[{"id":"i","type":"set","with":{"value":"${{ item }}"}}],"output":"${{ nodes.i.output }}"}`,
		"workflow": `{"workflow":"child","input":{"x":1}}`,
		"model":    `{"role":"r","system":"s","prompt":"p","messages":[{"role":"user","content":"c"}],"temperature":0.5,"maxTokens":100,"json":{"type":"object"}}`,
		"agent":    `{"role":"r","system":"s","prompt":"p","messages":"${{ input.m }}","temperature":"${{ input.t }}","maxTokens":"${{ input.n }}","toolsets":["t"],"tools":["t.x"],"maxSteps":3}`,
		"tool":     `{"toolset":"t","tool":"x","arguments":{"a":1}}`,
		"http":     `{"method":"GET","url":"https://example.com","query":{"q":"1"},"headers":{"h":"v"},"body":{"b":1},"timeoutMs":100,"responseType":"json","failOnStatus":true}`,
	}
	var docs []string
	for _, typ := range sortedKeys(withs) {
		w := withs[typ]
		docs = append(docs,
			fmt.Sprintf(`{"nodes":[{"id":"n","type":%q,"name":"N","description":"D","needs":[],"when":"true","with":%s,"retry":{"maxAttempts":3,"backoffMs":0,"factor":1.5,"maxBackoffMs":10},"timeoutMs":5,"onError":"continue"}]}`, typ, w),
			fmt.Sprintf(`{"nodes":[{"id":"n","with":%s}]}`, w))
	}
	return docs
}

func TestDocSchemaAgreesWithLibrary(t *testing.T) {
	corpus := dsHarvest(t)
	for _, d := range dsFullNodes() {
		corpus[d] = []byte(d)
	}
	bases := sortedKeys(corpus)
	n, failures := 0, 0
	for _, k := range bases {
		dsCheck(t, "harvested", corpus[k])
		n++
	}
	// Mutations of the documents that exercise every rule; the harvested
	// ones are many and alike, so a sample of them.
	var seeds []string
	seeds = append(seeds, dsFullNodes()...)
	for i, k := range bases {
		if i%7 == 0 && len(k) < 2000 {
			seeds = append(seeds, k)
		}
	}
	if testing.Short() {
		seeds = seeds[:16]
	}
	for _, s := range seeds {
		for _, m := range dsMutations([]byte(s)) {
			n++
			if !dsCheck(t, "mutation", m) {
				// The first disagreements say enough.
				if failures++; failures > 20 {
					t.FailNow()
				}
			}
		}
	}
	t.Logf("%d documents compared", n)
}

// TestDocSchemaCatchesDisagreement makes sure the comparison can fail: a
// document the checks judge as the library does, compared against a
// deliberately different report.
func TestDocSchemaCatchesDisagreement(t *testing.T) {
	raw := []byte(`{"nodes":[{"id":"a","type":"set","timeoutMs":0}]}`)
	agree, lib, own, ok := dsCompare(t, raw)
	if !ok || !agree || len(lib.details) != 1 || !strings.Contains(own.details[0], "workflow.nodes[0].timeoutMs: minimum") {
		t.Fatalf("agree=%v lib=%q own=%q", agree, lib.details, own.details)
	}
	valid, err := decodeDocument([]byte(`{"nodes":[]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	other := dsReport(checkDocumentSchema("workflow", valid))
	if slices.Equal(other.details, lib.details) {
		t.Fatal("a valid document's report equals an invalid one's")
	}
}

func FuzzDocSchema(f *testing.F) {
	for _, d := range dsFullNodes() {
		f.Add([]byte(d))
		for i, m := range dsMutations([]byte(d)) {
			if i%23 == 0 {
				f.Add(m)
			}
		}
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"nodes":[{"id":"a","type":"set","timeoutMs":1e-9999999,"needs":[1e9999999,1e9999999],"retry":{"factor":1e-9999999}}],"version":1e9999999}`))
	f.Add([]byte(`{"nodes":[{"id":"a","needs":["b","c","b"]}],"version":1.0}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<16 {
			return
		}
		dsCheck(t, "fuzz", raw)
	})
}
