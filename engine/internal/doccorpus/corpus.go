// Package doccorpus holds the corpus of workflow documents the tests of
// engine and engine/document share: every document the tests, examples
// and conformance cases hold, mutations of them that exercise each rule
// of the workflow schema, and one node of each type with every with
// member set. Only tests import it.
package doccorpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// WalkObjects calls visit on every object in v, v itself first.
func WalkObjects(v any, visit func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(v)
		for _, e := range v {
			WalkObjects(e, visit)
		}
	case []any:
		for _, e := range v {
			WalkObjects(e, visit)
		}
	}
}

// Harvest collects workflow documents: examples/, and every JSON object
// with a "nodes" member in the string literals of the tests of engine,
// functions and conformance.
func Harvest(t testing.TB, engineDir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	add := func(name string, v any) {
		WalkObjects(v, func(m map[string]any) {
			if _, ok := m["nodes"]; ok {
				b, _ := json.Marshal(m)
				out[string(b)] = b
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(engineDir, "../examples/*.json"))
	literal := regexp.MustCompile("(?s)`(\\{.*?)`")
	for _, pattern := range []string{"*_test.go", "document/*_test.go", "../functions/*_test.go", "../conformance/*.go"} {
		more, _ := filepath.Glob(filepath.Join(engineDir, pattern))
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

// Values replace a member's value in mutations: one of every JSON type,
// numbers at and around the schema's bounds, strings with and without a
// template.
var Values = []string{
	`null`, `true`, `false`, `0`, `-1`, `1`, `1.0`, `1.5`, `0.5`, `10`, `11`, `1e2`, `-0`, `1e400`, `2E-1`,
	`""`, `"x"`, `"1a"`, `"OK_CODE"`, `"${{ input.x }}"`, `"json"`, `"user"`,
	`[]`, `[1]`, `["a","a"]`, `["a",1]`, `[{"role":"user","content":"c"}]`, `[{"role":"x"}]`,
	`{}`, `{"x":1}`, `{"a":"b"}`, `{"0":1}`,
}

// Mutations derives documents from raw: each member of each object
// removed, replaced by each of Values, and an extra member added.
func Mutations(raw []byte) [][]byte {
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
				for _, r := range Values {
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
				for _, r := range Values[:8] {
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

// FullNodes are one node of each type with every with member set, and
// the same withs under a node without a type.
func FullNodes() []string {
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
	for _, typ := range slices.Sorted(maps.Keys(withs)) {
		w := withs[typ]
		docs = append(docs,
			fmt.Sprintf(`{"nodes":[{"id":"n","type":%q,"name":"N","description":"D","needs":[],"when":"true","with":%s,"retry":{"maxAttempts":3,"backoffMs":0,"factor":1.5,"maxBackoffMs":10},"timeoutMs":5,"onError":"continue"}]}`, typ, w),
			fmt.Sprintf(`{"nodes":[{"id":"n","with":%s}]}`, w))
	}
	return docs
}
