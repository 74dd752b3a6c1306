package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

const consentBody = `{"version":1,"workflow":{"nodes":[{"id":"page","type":"tool","with":{"toolset":"pager","tool":"page_oncall"}}]},
 "runtime":{"toolsets":[{"name":"pager","url":"http://pager.invalid/mcp"}]},
 "toolPolicies":[{"match":"pager/*","decision":"consent"}],"consentAvailable":true}`

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunOnATerminal(t *testing.T) {
	srv := newRunner(t)
	bare := writeFile(t, "bare.json", `{"nodes":[{"id":"hi","type":"set","with":{"value":"${{ input.n + 1 }}"}},
		{"id":"never","type":"set","needs":["hi"],"when":"nodes.hi.output < 0","with":{"value":1}}],
		"output":"${{ nodes.hi.output }}"}`)
	tests := []struct {
		name     string
		args     []string
		token    string
		code     int
		want     []string // in the terminal's output, in order
		wantErr  []string // on standard error
		excluded []string
	}{
		{"completed", []string{"run", "../../../../examples/hello.json"}, testToken, 0,
			[]string{"✓ greet (set) completed · attempt 1", "✓ shout (set) completed", "completed in", `"greeting": "HELLO, ADA!"`}, nil, nil},
		{"map items and child workflows nest", []string{"run", "../../../../examples/fanout.json"}, testToken, 0,
			[]string{"✓ each (map) completed", "\n  [0]", "    ✓ shout (set) completed", "✓ summary (workflow) completed", "  ✓ join (set) completed",
				"✗ optional (fail) failed · attempt 1 · ", " ms · NOT_NEEDED: this node fails", `"optionalStatus": "failed"`}, nil, nil},
		{"bare document with --input, skipped node", []string{"run", bare, "--input", `{"n":41}`}, testToken, 0,
			[]string{"- never (set) skipped", "\n42"}, nil, nil},
		{"failed", []string{"run", "-"}, testToken, 1, nil, nil, nil},
		{"suspended for consent", []string{"run", writeFile(t, "c.json", consentBody)}, testToken, 3,
			[]string{"⏸ page (tool) suspended", "permission consent tool.call pager/page_oncall: toolPolicy", "suspended: consent needed for", "page: tool.call pager/page_oncall"}, nil, nil},
		{"invalid", []string{"run", writeFile(t, "i.json", `{"nodes":[{"id":"a","type":"set","needs":["b"],"with":{"value":1}}]}`)}, testToken, 2,
			nil, []string{"invalid execution (400 INVALID_EXECUTION)", "workflow.nodes[0].needs[0]: "}, nil},
		{"unauthorized", []string{"run", "../../../../examples/hello.json"}, "wrong", 4,
			nil, []string{"unauthorized"}, []string{"wrong"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args[1] == "-" {
				args = []string{"run", writeFile(t, "f.json", `{"nodes":[{"id":"boom","type":"fail","with":{"message":"no such issue","code":"NOT_FOUND"}}]}`)}
				tt.want = []string{"✗ boom (fail) failed · attempt 1", "failed at node boom: EXECUTION_FAILED: node boom failed: NOT_FOUND: no such issue"}
			}
			res := runPTY(t, env(srv.URL, tt.token), args...)
			if res.code != tt.code {
				t.Errorf("exit %d, want %d\nout: %s\nerr: %s", res.code, tt.code, res.out, res.err)
			}
			rest := res.out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("terminal lacks %q (in order)\n%s", w, res.out)
					continue
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(res.err, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.err)
				}
			}
			for _, x := range tt.excluded {
				if strings.Contains(res.out+res.err, x) {
					t.Errorf("output contains %q", x)
				}
			}
			if tt.code != 2 && tt.code != 4 && !strings.Contains(res.out, "\x1b[J") {
				t.Errorf("no in-place redraw on a terminal:\n%q", res.out)
			}
		})
	}
}

func TestRunThroughAPipeIsByteForByte(t *testing.T) {
	// Odd spacing, an unknown field and an unknown event type: all copied
	// as they came.
	stream := `{"version":1,"type":"accepted","executionId":"x","at":"t"}` + "\n" +
		`{"version":1, "type":"node.started","executionId":"x","at":"t","nodeId":"a","nodeType":"set","attempt":1,"extra":[1,2]}` + "\n" +
		`{"version":1,"type":"future.event","executionId":"x","at":"t"}` + "\n"
	tests := []struct {
		name, terminal string
		code           int
	}{
		{"completed", `{"version":1,"type":"result","executionId":"x","at":"t","status":"completed","output":{"a":1},"usage":{},"durationMs":3}` + "\n", 0},
		{"failed", `{"version":1,"type":"error","executionId":"x","at":"t","error":{"code":"EXECUTION_FAILED","message":"m","nodeId":"a"}}` + "\n", 1},
		{"suspended", `{"version":1,"type":"result","executionId":"x","at":"t","status":"suspended","output":null,"usage":{},"durationMs":3,"suspended":[{"nodeId":"a","action":"tool.call","resource":"p/q"}]}` + "\n", 3},
		{"no terminal event", ``, 1},
		{"no final newline", `{"version":1,"type":"result","executionId":"x","at":"t","status":"completed","output":1,"usage":{},"durationMs":3}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := cannedRunner(t, stream+tt.terminal)
			res := runPipe(t, env(srv.URL, testToken), `{"nodes":[]}`, "run", "-")
			if res.out != stream+tt.terminal {
				t.Errorf("stdout differs from the stream:\n got %q\nwant %q", res.out, stream+tt.terminal)
			}
			if res.code != tt.code {
				t.Errorf("exit %d, want %d (%s)", res.code, tt.code, res.err)
			}
		})
	}
	t.Run("--json on a terminal", func(t *testing.T) {
		srv := cannedRunner(t, stream)
		res := runPTY(t, env(srv.URL, testToken), "run", "--json", writeFile(t, "w.json", `{"nodes":[]}`))
		if strings.Contains(res.out, "\x1b[") || !strings.Contains(res.out, `"extra":[1,2]`) {
			t.Errorf("--json on a terminal drew progress: %q", res.out)
		}
	})
	t.Run("real runner through a pipe", func(t *testing.T) {
		srv := newRunner(t)
		res := runPipe(t, env(srv.URL, testToken), "", "run", "../../../../examples/hello.json")
		lines := strings.Split(strings.TrimSuffix(res.out, "\n"), "\n")
		if res.code != 0 || len(lines) != 8 || !strings.Contains(lines[0], `"type":"accepted"`) || !strings.Contains(lines[7], `"status":"completed"`) {
			t.Errorf("exit %d, %d lines:\n%s%s", res.code, len(lines), res.out, res.err)
		}
	})
	t.Run("invalid through a pipe", func(t *testing.T) {
		srv := newRunner(t)
		res := runPipe(t, env(srv.URL, testToken), `{"version":2,"workflow":{"nodes":[]}}`, "run", "-")
		if res.code != 2 || !strings.Contains(res.err, "version: unsupported protocol version 2") {
			t.Errorf("exit %d, stderr %s", res.code, res.err)
		}
	})
}

func TestRunUnavailable(t *testing.T) {
	res := runPipe(t, env("http://127.0.0.1:1", testToken), `{"nodes":[]}`, "run", "-")
	if res.code != 4 || !strings.Contains(res.err, "cannot reach the runner") {
		t.Errorf("exit %d, stderr %s", res.code, res.err)
	}
}

// summaryOf is what runnerctl printed after the board: from the line that
// names the execution to the end.
func summaryOf(out string) []string {
	i := strings.LastIndex(out, "execution ")
	if i < 0 {
		return nil
	}
	// The terminal writes "\r\n" as "\r\r\n".
	lines := strings.Split(strings.TrimRight(out[i:], "\r\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	return lines[1:]
}

// The board is cut to the screen and its lines to the width; the failures
// come again after it, whole and wrapped. testdata/map50-3failed.ndjson is
// the stream the runner sent for a 50-item map whose items 7, 23 and 41
// failed (onError: continue) with a message longer than the terminal.
func TestRunEndsWithEveryFailureWhole(t *testing.T) {
	recorded, err := os.ReadFile("testdata/map50-3failed.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	const rejected = "was rejected by the upstream review service because its payload carried a field the schema of version 2026-11 no longer accepts (field: legacy_owner_id); migrate the record and send it again"
	head := `{"version":1,"type":"accepted","executionId":"x","at":"t"}` + "\n"
	tests := []struct {
		name     string
		stream   string
		code     int
		failures []string // each one's whole text, in order
		after    string   // the line that follows the summary
	}{
		{"a 50-item map with 3 failed items", string(recorded), 0,
			[]string{"each[7].check (fail): ITEM_REJECTED: item 7 " + rejected, "each[23].check (fail): ITEM_REJECTED: item 23 " + rejected,
				"each[41].check (fail): ITEM_REJECTED: item 41 " + rejected}, "completed in"},
		{"a failed execution", head +
			`{"version":1,"type":"node.started","executionId":"x","at":"t","nodeId":"fetch","nodeType":"http","attempt":1}` + "\n" +
			`{"version":1,"type":"node.failed","executionId":"x","at":"t","nodeId":"fetch","nodeType":"http","attempt":1,"durationMs":3,"error":{"code":"HTTP_ERROR","message":"GET https://api.example.com/items/unbroken-path-segment-that-is-longer-than-the-whole-terminal-line-of-one-hundred-columns-so-it-must-break: status 404 Not Found"},"retrying":false}` + "\n" +
			`{"version":1,"type":"error","executionId":"x","at":"t","error":{"code":"EXECUTION_FAILED","message":"node fetch failed","nodeId":"fetch"}}` + "\n", 1,
			[]string{"fetch (http): HTTP_ERROR: GET https://api.example.com/items/unbroken-path-segment-that-is-longer-than-the-whole-terminal-line-of-one-hundred-columns-so-it-must-break: status 404 Not Found"},
			"failed at node fetch"},
		{"a retry that succeeded is no failure", head +
			`{"version":1,"type":"node.started","executionId":"x","at":"t","nodeId":"a","nodeType":"set","attempt":1}` + "\n" +
			`{"version":1,"type":"node.failed","executionId":"x","at":"t","nodeId":"a","nodeType":"set","attempt":1,"durationMs":3,"error":{"code":"TIMEOUT","message":"slow"},"retrying":true}` + "\n" +
			`{"version":1,"type":"node.started","executionId":"x","at":"t","nodeId":"a","nodeType":"set","attempt":2}` + "\n" +
			`{"version":1,"type":"node.completed","executionId":"x","at":"t","nodeId":"a","nodeType":"set","attempt":2,"durationMs":3}` + "\n" +
			`{"version":1,"type":"result","executionId":"x","at":"t","status":"completed","output":1,"usage":{},"durationMs":3}` + "\n", 0,
			nil, "completed in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := cannedRunner(t, tt.stream)
			res := runPTY(t, env(srv.URL, testToken), "run", writeFile(t, "w.json", `{"nodes":[]}`))
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, tt.code, res.out, res.err)
			}
			lines := summaryOf(res.out)
			if len(lines) == 0 {
				t.Fatalf("no execution line:\n%q", res.out)
			}
			var got []string
			full := false // the last line filled the width: a word went on
			if len(tt.failures) > 0 {
				if want := fmt.Sprintf("%d failed:", len(tt.failures)); lines[0] != want {
					t.Fatalf("summary starts %q, want %q\n%s", lines[0], want, strings.Join(lines, "\n"))
				}
				lines = lines[1:]
			}
			for len(lines) > 0 && strings.HasPrefix(lines[0], "  ") {
				l := lines[0]
				if n := utf8.RuneCountInString(l); n > 100 {
					t.Errorf("line of %d columns on a terminal of 100: %q", n, l)
				}
				if strings.Contains(l, "…") {
					t.Errorf("a failure is cut: %q", l)
				}
				switch {
				case !strings.HasPrefix(l, "      "):
					got = append(got, l[2:])
				case full: // inside a word too long for a line
					got[len(got)-1] += l[6:]
				default:
					got[len(got)-1] += " " + l[6:]
				}
				full = utf8.RuneCountInString(l) == 100
				lines = lines[1:]
			}
			if strings.Join(got, "\n") != strings.Join(tt.failures, "\n") {
				t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.failures, "\n"))
			}
			if len(lines) == 0 || !strings.HasPrefix(lines[0], tt.after) {
				t.Errorf("after the failures: %q, want %q", lines, tt.after)
			}
		})
	}
}
