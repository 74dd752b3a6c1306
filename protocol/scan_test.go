package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCheckStructure(t *testing.T) {
	tests := []struct {
		name, body string
		depth      int
		want       []Detail // nil: no problem
		syntax     string   // "line:col" of a *Syntax
	}{
		{name: "valid", body: `{"a":[1,{"b":null}],"c":"x"}`},
		{name: "same key in sibling objects", body: `{"a":{"k":1},"b":{"k":2}}`},
		{name: "duplicate top-level", body: `{"permissions":[],"permissions":null}`,
			want: []Detail{{"permissions", `duplicate key "permissions": every key may appear once in an object`}}},
		{name: "duplicate nested", body: `{"workflow":{"nodes":[{"id":"a"},{"id":"b","with":{"x":1,"y":2,"x":3}}]}}`,
			want: []Detail{{"workflow.nodes[1].with.x", `duplicate key "x": every key may appear once in an object`}}},
		{name: "duplicate in array of arrays", body: `[[{"a":1}],[{"b":1,"b":2}]]`,
			want: []Detail{{"[1][0].b", `duplicate key "b": every key may appear once in an object`}}},
		{name: "many duplicates, reported up to a cap", body: `{"a":1` + strings.Repeat(`,"a":1`, 150) + `}`,
			want: append(slices.Repeat([]Detail{{"a", `duplicate key "a": every key may appear once in an object`}}, 100), Detail{"", "50 more duplicate keys"})},
		{name: "key equal to a string value", body: `{"a":"b","b":"a"}`},
		{name: "many distinct keys", body: `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}`},
		{name: "duplicates before and after the fourth key", body: `{"a":1,"b":2,"a":3,"c":4,"d":5,"e":6,"d":7,"f":8,"e":9}`,
			want: []Detail{
				{"a", `duplicate key "a": every key may appear once in an object`},
				{"d", `duplicate key "d": every key may appear once in an object`},
				{"e", `duplicate key "e": every key may appear once in an object`},
			}},
		{name: "escaped duplicate key", body: `{"a":1,"b":2,"c":3,"d":4,"e":5,"\u0061":6}`,
			want: []Detail{{"a", `duplicate key "a": every key may appear once in an object`}}},
		{name: "too deep", body: `{"a":{"b":[[1]]}}`, depth: 3,
			want: []Detail{{"a.b[0]", "nested deeper than maxDepth (3 levels)"}}},
		{name: "at the cap", body: `{"a":{"b":[1]}}`, depth: 3},
		{name: "syntax line col", body: "{\n  \"a\": 1,\n  \"b\": x\n}", syntax: "3:8"},
		{name: "truncated", body: `{"a":`, syntax: "1:6"},
		{name: "empty", body: ``, syntax: "1:1"},
		{name: "trailing", body: `{} x`, syntax: "1:4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStructure([]byte(tt.body), tt.depth)
			if tt.syntax != "" {
				var se *Syntax
				if !errors.As(err, &se) {
					t.Fatalf("got %v, want a syntax error", err)
				}
				if got := itoa(se.Line) + ":" + itoa(se.Column); got != tt.syntax {
					t.Fatalf("position %s, want %s (%v)", got, tt.syntax, se)
				}
				return
			}
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			var inv *Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want *Invalid", err)
			}
			if len(inv.Details) != len(tt.want) {
				t.Fatalf("details %v, want %v", inv.Details, tt.want)
			}
			for i := range tt.want {
				if inv.Details[i] != tt.want[i] {
					t.Errorf("detail %d: %v, want %v", i, inv.Details[i], tt.want[i])
				}
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestLocate(t *testing.T) {
	body := "{\"workflow\": {\n  \"nodes\": [\n    {\"id\": \"a\"},\n    {\"id\": \"b\", \"with\": {\"url\": 1}}\n  ]\n}}"
	got := Locate([]byte(body), []string{"workflow.nodes[1].with.url", "workflow.nodes[0].missing", "workflow", "nope[3]"})
	for path, want := range map[string]string{
		"workflow.nodes[1].with.url": "1",
		"workflow.nodes[0].missing":  `{"id": "a"}`,
		"workflow":                   "{\n",
		"nope[3]":                    "{\"workflow\"",
	} {
		off, ok := got[path]
		if !ok || !strings.HasPrefix(body[off:], want) {
			t.Errorf("%s at %d (%v), want the value %q", path, off, ok, want)
		}
	}
	line, col := LineColumn([]byte(body), got["workflow.nodes[1].with.url"])
	if line != 4 || col != 33 {
		t.Errorf("line:col %d:%d, want 4:33", line, col)
	}
}

// FuzzCheckStructure: the structure walk never panics, agrees with
// encoding/json on what is JSON, and Locate finds paths in any body.
func FuzzCheckStructure(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"workflow":{}}`,
		`{"permissions":[],"permissions":null}`,
		`{"a":{"b":[{"c":1,"c":2}]}}`,
		`[[[[[[[[[[]]]]]]]]]]`,
		`{"a":"b","b":"a"}`,
		"{\n \"a\": x}",
		`{"a":1} {}`,
		`"\u00e9"`,
		``,
		`{"":1,"":2}`,
		`{"a\u0000":1,"a":2}`,
	} {
		f.Add([]byte(seed), 4)
	}
	f.Fuzz(func(t *testing.T, data []byte, depth int) {
		depth %= 64
		err := CheckStructure(data, depth)
		var se *Syntax
		isSyntax := errors.As(err, &se)
		var inv *Invalid
		if errors.As(err, &inv) && inv.tooDeep {
			return // refused before the walk reached the rest
		}
		if valid := json.Valid(data); valid == isSyntax {
			t.Fatalf("json.Valid %v, CheckStructure %v", valid, err)
		}
		if json.Valid(data) {
			// The fast walk of valid bodies and the token walk agree.
			slow := checkStructure(walkTokens, data, depth)
			if fmt.Sprint(err) != fmt.Sprint(slow) {
				t.Fatalf("walk: %v\ntoken walk: %v", err, slow)
			}
		}
		if isSyntax && (se.Offset < 0 || se.Offset > len(data) || se.Line < 1 || se.Column < 1) {
			t.Fatalf("position out of range: %+v", se)
		}
		for p, off := range Locate(data, []string{"a", "a.b[0]", "[1].c", "workflow.nodes[0].id"}) {
			if off < 0 || off > len(data) {
				t.Fatalf("%s at %d, outside the body", p, off)
			}
		}
	})
}

// A body nested millions deep is walked no further than any decoder reads:
// runnerctl validate located its problems in 3–13 s and 3.4–6.6 GB for 6
// MB of '[' (json.Valid refuses it, so the token walk held every level).
// Paths before the depth are still located.
func TestLocateStopsBelowEveryDecoder(t *testing.T) {
	tests := []struct {
		name, doc string
		want      map[string]int
	}{
		{"arrays", strings.Repeat("[", 6<<20), map[string]int{"workflow.nodes[0].id": 0}},
		{"under a node", `{"workflow":{"nodes":[` + strings.Repeat("[", 6<<20), map[string]int{"workflow.nodes[0].id": 22}},
		{"objects", `{"a":1,"b":` + strings.Repeat(`{"x":`, 1<<20), map[string]int{"a": 5, "b.x": 16}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths := make([]string, 0, len(tt.want))
			for p := range tt.want {
				paths = append(paths, p)
			}
			doc := []byte(tt.doc)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := Locate(doc, paths)
			runtime.ReadMemStats(&after)
			allocs := int64(after.TotalAlloc - before.TotalAlloc)
			for p, want := range tt.want {
				if got[p] != want {
					t.Errorf("Locate(%s) = %d, want %d", p, got[p], want)
				}
			}
			if max := int64(len(tt.doc)) * 4; allocs > max {
				t.Errorf("Locate allocated %d bytes for a %d-byte body, want at most %d", allocs, len(tt.doc), max)
			}
		})
	}
}
