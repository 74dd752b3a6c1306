package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	bad := writeFile(t, "bad.json", "{\"nodes\":[\n {\"id\":\"a\",\"type\":\"set\",\"needs\":[\"b\"],\"with\":{\"value\":1}},\n {\"id\":\"c\",\"type\":\"nope\"}\n]}")
	tests := []struct {
		name  string
		args  []string
		code  int
		lines []string
	}{
		{"valid examples", []string{"validate", "../../../../examples/hello.json", "../../../../examples/fanout.json"}, 0, nil},
		{"problems with positions and paths", []string{"validate", bad}, 1, []string{
			bad + `:2:34: nodes[0].needs[0]: unknown node id "b"`,
			bad + `:3:19: nodes[1].type: node "c": unknown node type "nope"`,
		}},
		{"malformed JSON", []string{"validate", writeFile(t, "m.json", "{\"nodes\":\n[}")}, 1, []string{":2:2: malformed JSON"}},
		{"missing file", []string{"validate", "no-such.json"}, 1, []string{"no-such.json: open no-such.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runPipe(t, env("", ""), "", tt.args...)
			if res.code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", res.code, tt.code, res.out, res.err)
			}
			for _, l := range tt.lines {
				if !strings.Contains(res.out, l) {
					t.Errorf("output lacks %q:\n%s", l, res.out)
				}
			}
			if tt.code == 0 && res.out != "" {
				t.Errorf("output for valid files: %s", res.out)
			}
		})
	}
}

func TestCaps(t *testing.T) {
	srv := newRunner(t)
	res := runPipe(t, env(srv.URL, testToken), "", "caps")
	for _, want := range []string{"runner              cli-test 0\n", "node types          agent, fail,", "execution time    14m59.5s\n", "request size      6 MiB\n", "memory            512 MiB\n", "consent             suspend\n", "  expressions       0\n", "  fan-out           off\n"} {
		if !strings.Contains(res.out, want) {
			t.Errorf("caps lacks %q:\n%s", want, res.out)
		}
	}
	res = runPipe(t, env(srv.URL, testToken), "", "caps", "--json")
	var doc map[string]any
	if res.code != 0 || json.Unmarshal([]byte(res.out), &doc) != nil || doc["version"] != float64(1) {
		t.Errorf("caps --json: exit %d %q", res.code, res.out)
	}
	res = runPipe(t, env(srv.URL, "bad"), "", "caps")
	if res.code != 4 || !strings.Contains(res.err, "unauthorized") {
		t.Errorf("bad token: exit %d %s", res.code, res.err)
	}
}

func TestCheck(t *testing.T) {
	srv := newRunner(t)
	res := runPipe(t, env("", testToken), "", "check", srv.URL)
	if res.code != 0 || !strings.Contains(res.out, "stream.one-terminal") || !strings.Contains(res.out, "0 failed") {
		t.Errorf("check: exit %d\n%s%s", res.code, res.out, res.err)
	}
	if strings.Contains(res.out, testToken) {
		t.Error("the report shows the token")
	}
	res = runPipe(t, env(srv.URL, "wrong-token"), "", "check", "--json")
	var rep struct {
		Failed  int
		Results []struct{ ID, Status, Reason string }
	}
	if err := json.Unmarshal([]byte(res.out), &rep); err != nil || res.code != 1 || rep.Failed == 0 {
		t.Errorf("check with a wrong token: exit %d, %v\n%s", res.code, err, res.out)
	}
	res = runPipe(t, env(srv.URL, ""), "", "check")
	if res.code != 2 || !strings.Contains(res.err, "RUNNER_TOKEN") {
		t.Errorf("check without a token: exit %d %s", res.code, res.err)
	}
}

func TestGraphCommand(t *testing.T) {
	res := runPipe(t, env("", ""), "", "graph", "--format", "dot", "../../../../examples/fanout.json")
	if res.code != 0 || !strings.HasPrefix(res.out, `digraph "fanout" {`) {
		t.Errorf("exit %d\n%s%s", res.code, res.out, res.err)
	}
	res = runPipe(t, env("", ""), `{"nodes":[{"id":"a","type":"set"}]}`, "graph", "-")
	if res.code != 0 || !strings.HasPrefix(res.out, "flowchart TD\n") {
		t.Errorf("exit %d\n%s%s", res.code, res.out, res.err)
	}
	res = runPipe(t, env("", ""), `{}`, "graph", "--format", "svg", "-")
	if res.code != 2 {
		t.Errorf("bad input: exit %d", res.code)
	}
}
