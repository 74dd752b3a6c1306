package document

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/runnerd/lambda-runner/engine/internal/doccorpus"
)

// The typed decode (decode.go) must read every document as
// encoding/json reads it (UseNumber, the last of duplicate keys counting),
// sorted into typed members and rest by nodeFromValue's rules: then the
// check and the compile see what they saw when the document was a generic
// tree.

// decodeAgreeCorpus: documents with every member typed and of another
// type, duplicates both ways, escapes, UTF-8 and not, odd white space.
var decodeAgreeCorpus = []string{
	`{"nodes":[]}`,
	`{"id":"w","nodes":[{"id":"a","type":"set","with":{"value":1.50}}],"output":"${{ nodes.a.output }}","input":{"type":"object"}}`,
	` { "nodes" : [ { "id" : "a" , "type" : "set" , "needs" : [ "b" , "c" ] } ] } `,
	`{"nodes":[{"id":1,"type":true,"when":null,"needs":"a","with":[1]}]}`,
	`{"nodes":[{"id":"a","id":1},{"id":1,"id":"b"},{"needs":["a"],"needs":[1]},{"needs":[1],"needs":["a"]}]}`,
	`{"nodes":[{"with":{"value":1},"with":"x"},{"with":"x","with":{"value":2}}]}`,
	`{"nodes":[{"id":"a","needs":["x",1,"y"],"timeoutMs":1e30,"retry":{"maxAttempts":3,"factor":1.5},"onError":"continue","name":"n","x":{}}]}`,
	`{"nodes":[1,"a",null,[],{}],"version":1,"$schema":"s"}`,
	`{"nodes":{},"id":5,"input":true,"output":null}`,
	`{"nodes":[{"id":"\u0061\n","type":"s\u00e9t","with":{"v\u0061lue":"\ud83d\ude00","\u0000":"\u0000"}}]}`,
	"{\"nodes\":[{\"id\":\"\xff\",\"type\":\"\xe2\x82\",\"with\":{\"\xc0\":\"ok\xed\xa0\x80\"}}]}",
	`{"nodes":[{"id":"a","type":"map","with":{"items":[1,2],"nodes":[{"id":"b","type":"set","needs":[],"with":{"value":"${{ item }}"}}]}}]}`,
	`{"nodes":[{"id":"a","with":{"a":{"b":[[[{"c":-0.0e-0}]]]},"t":true,"f":false,"n":null}}]}`,
	`[]`, `"doc"`, `12`, `null`, `{}`,
	`{"nodes":[],"nodes":[{"id":"a"}]}`, `{"nodes":[{"id":"a"}],"nodes":[]}`,
	`{"id":"a","id":7}`, `{"id":7,"id":"a"}`,
}

// documentFromText is what the typed decode must give for raw: raw read
// by encoding/json, its nodes by nodeFromValue.
func documentFromText(t testing.TB, raw []byte) *Document {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return &Document{value: v}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		t.Fatal(err)
	}
	doc := &Document{isObject: true}
	for k, e := range m {
		switch s, isStr := e.(string); {
		case k == "id" && isStr:
			doc.ID, doc.has = s, doc.has|hasID
			continue
		case k == "input":
			doc.Input, doc.has = members[k], doc.has|hasInput
			continue
		case k == "output":
			doc.Output, doc.has = members[k], doc.has|hasOutput
			continue
		}
		if a, isArr := e.([]any); k == "nodes" && isArr {
			doc.Nodes, _ = ParseNodes(a)
			doc.has |= hasNodes
			continue
		}
		if doc.rest == nil {
			doc.rest = map[string]any{}
		}
		doc.rest[k] = e
	}
	return doc
}

// normalize clears what the two reads may differ in without meaning:
// empty against nil, a slice's capacity.
func normalize(doc *Document) {
	if len(doc.rest) == 0 {
		doc.rest = nil
	}
	if len(doc.Nodes) == 0 {
		doc.Nodes = nil
	}
	for i := range doc.Nodes {
		n := &doc.Nodes[i]
		if len(n.rest) == 0 {
			n.rest = nil
		}
		if len(n.Needs) == 0 {
			n.Needs = nil
		} else {
			n.Needs = append([]string(nil), n.Needs...)
		}
	}
}

func checkDecodeAgrees(t *testing.T, raw []byte) {
	t.Helper()
	got, err := Decode(raw, 0)
	// The one pass's hook is given text nothing checked before: it must
	// refuse exactly what encoding/json refuses.
	_, herr := Decoder(0, 0)(raw)
	if !json.Valid(raw) {
		if err == nil {
			t.Fatalf("%.200q is not JSON, decoded", raw)
		}
		if herr == nil {
			t.Fatalf("%.200q is not JSON, the hook decoded it", raw)
		}
		return
	}
	if herr != nil {
		t.Fatalf("%.200q: the hook refused JSON: %v", raw, herr)
	}
	if err != nil {
		t.Fatalf("%.200q: %v", raw, err)
	}
	want := documentFromText(t, raw)
	normalize(got)
	normalize(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.200q:\n got  %#v\n want %#v", raw, got, want)
	}
}

func TestDecodeDocumentAgrees(t *testing.T) {
	for _, raw := range decodeAgreeCorpus {
		checkDecodeAgrees(t, []byte(raw))
	}
	for _, raw := range doccorpus.FullNodes() {
		checkDecodeAgrees(t, []byte(raw))
	}
}

// decodeRefuseCorpus: text that is not JSON, by a little.
var decodeRefuseCorpus = []string{
	``, `{`, `{"nodes":[}`, `{"nodes":[{"id":"a",}]}`, `{"a":tru}`, `{"a":"x`, `{"a":1}}`,
	`{"a":"` + "\x01" + `"}`, `{"a":-}`, `{"a" 1}`, `{"a":[1 2]}`, `{"a":"\q"}`, `{1:2}`,
	// Numbers and escapes only encoding/json's scanner refused before.
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":--1}`, `{"a":1-2}`, `{"a":+1}`,
	`{"a":1.5e3.2}`, `{"input":"\q"}`, `{"output":{"x":"\u12"}}`, `{"nodes":[{"x":"\u12G4"}]}`,
	`{"nodes":[{"with":{"v":[1,2,]}}]}`, `{"output":1E}`, `{"a":-0.}`,
}

// TestDecodeDocumentRefuses: text that is not JSON is an error, never a
// panic, from the document's decode and from the one pass's hook.
func TestDecodeDocumentRefuses(t *testing.T) {
	for _, raw := range decodeRefuseCorpus {
		if _, err := Decode([]byte(raw), 0); err == nil {
			t.Errorf("%q decoded", raw)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%q: the hook panicked: %v", raw, r)
				}
			}()
			if _, err := Decoder(128, 0)([]byte(raw)); err == nil {
				t.Errorf("%q: the hook decoded it", raw)
			}
		}()
	}
}

func FuzzDecodeDocument(f *testing.F) {
	for _, raw := range decodeAgreeCorpus {
		f.Add([]byte(raw))
	}
	for _, raw := range decodeRefuseCorpus {
		f.Add([]byte(raw))
	}
	f.Add([]byte(`{"nodes":[{"id":"a","needs":["a",`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<16 {
			return
		}
		checkDecodeAgrees(t, raw)
		_, _ = Decoder(16, 0)(raw)
	})
}
