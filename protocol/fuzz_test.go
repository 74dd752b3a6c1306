package protocol

import (
	"errors"
	"testing"
)

// FuzzDecodeRequest checks the contract of DecodeRequest on any input: it
// never panics, and it returns either a request of version 1 with an object
// workflow, or an *Invalid naming at least one problem, never both.
//
// The seed corpus runs with plain go test; go test -fuzz=FuzzDecodeRequest
// explores further.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		minimal,
		`{"version":1.0,"workflow":{"nodes":[{"id":"a","type":"set"}]},"input":[1,"x",null],"trace":true}`,
		`{"version":1,"workflow":{},"runtime":{"models":[{"role":"general","provider":"openai","model":"m","apiKey":"k","maxTokens":10}],` +
			`"toolsets":[{"name":"gh","url":"https://mcp","headers":{"Authorization":"Bearer t"}}],"workflows":[{}],` +
			`"http":{"policy":{"timeoutMs":1000,"maxRedirects":0},"secrets":{"a":"s","b":{"value":"v","hosts":["h"]}}}}}`,
		`{"version":1,"workflow":{},"permissions":[],"authorization":{"grants":["tool:github/*",{"action":"http.request","resource":"h"}]},` +
			`"toolPolicies":[{"match":"gh/*","decision":"consent"}],"consentAvailable":true}`,
		`{"version":2,"workflow":[],"permissions":["tool:*",5],"runtime":{"http":{"secrets":{"x":1}}}}`,
		`{"version":"1","workflow":"{}"}`,
		`{"version":1,"workflow":"{}"}`,
		`{"version":1,"workflow":[{}],"runtime":{"workflows":["{}"]}}`,
		`{"version":null,"workflow":null,"runtime":[],"authorization":"x"}`,
		`{"version":1,"workflow":{},"runtime":{"models":[{"maxTokens":"many"},null,"x"],"workflows":[1,{}]}}`,
		`{"version":1,"workflow":{},"authorization":{"grants":["disk:/","tool:",7,null]}}`,
		`{"version":1e0,"workflow": {} ,"future":{"x":1}}`,
		`{"version":1,`,
		`[1,2]`,
		`null`,
		``,
		"\xff\xfe{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err != nil {
			if req != nil {
				t.Fatalf("DecodeRequest returned both a request and an error %v", err)
			}
			var inv *Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("error is %T (%v), want *Invalid", err, err)
			}
			if len(inv.Details) == 0 {
				t.Fatal("*Invalid without details")
			}
			if inv.Error() == "" {
				t.Fatal("*Invalid with an empty message")
			}
			return
		}
		if req == nil {
			t.Fatal("DecodeRequest returned neither a request nor an error")
		}
		if req.Version != Version {
			t.Fatalf("accepted request with Version %d", req.Version)
		}
		if len(req.Workflow) == 0 || req.Workflow[0] != '{' {
			t.Fatalf("accepted request with workflow %q, want an object", req.Workflow)
		}
		for i, w := range req.Runtime.Workflows {
			if len(w) == 0 || w[0] != '{' {
				t.Fatalf("accepted request with runtime.workflows[%d] = %q, want an object", i, w)
			}
		}
	})
}
