package wftest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// coverWorkflow has conditions at the top level, inside a map and inside a
// child workflow, which itself holds a map.
const coverWorkflow = `{"version": 1, "workflow": {"nodes": [
    {"id": "each", "type": "map", "with": {"items": "${{ input.items }}", "nodes": [
      {"id": "big", "type": "set", "when": "${{ item > 1 }}", "with": {"value": "${{ item }}"}},
      {"id": "huge", "type": "set", "when": "${{ item > 100 }}", "with": {"value": "${{ item }}"}}]}},
    {"id": "review", "type": "workflow", "with": {"workflow": "child", "input": {"n": "${{ input.n }}"}}},
    {"id": "later", "type": "workflow", "with": {"workflow": "${{ 'child' }}", "input": {"n": 1}}},
    {"id": "top", "type": "set", "when": "${{ input.n > 0 }}", "with": {"value": 1}}]},
  "runtime": {"workflows": [{"id": "child", "nodes": [
    {"id": "pos", "type": "set", "when": "${{ input.n > 0 }}", "with": {"value": 1}},
    {"id": "inner", "type": "map", "with": {"items": [1, 2], "nodes": [{"id": "leaf", "type": "set", "with": {"value": "${{ item }}"}}]}}]}]}
}`

func TestCoverNested(t *testing.T) {
	tests := []struct {
		name   string
		inputs []string // one case each
		want   workflowCover
	}{
		{"nothing true", []string{`{"items": [1], "n": 0}`}, workflowCover{
			NeverRun:      []string{"each.big", "each.huge", "review.pos", "top"},
			WhenNeverTrue: []string{"each.big", "each.huge", "review.pos", "top"}}},
		{"an iteration where nothing ran is still seen", []string{`{"items": [0], "n": 1}`}, workflowCover{
			NeverRun:       []string{"each.big", "each.huge"},
			WhenNeverTrue:  []string{"each.big", "each.huge"},
			WhenNeverFalse: []string{"review.pos", "top"}}},
		{"true and false in one case's iterations", []string{`{"items": [1, 2], "n": 1}`}, workflowCover{
			NeverRun:       []string{"each.huge"},
			WhenNeverTrue:  []string{"each.huge"},
			WhenNeverFalse: []string{"review.pos", "top"}}},
		{"over two cases", []string{`{"items": [1, 2], "n": 1}`, `{"items": [], "n": 0}`}, workflowCover{
			NeverRun:      []string{"each.huge"},
			WhenNeverTrue: []string{"each.huge"}}},
		{"no iteration", []string{`{"items": [], "n": 1}`}, workflowCover{
			NeverRun:       []string{"each.big", "each.huge"},
			WhenNeverTrue:  []string{"each.big", "each.huge"},
			WhenNeverFalse: []string{"each.big", "each.huge", "review.pos", "top"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			wf := filepath.Join(dir, "wf.json")
			if err := os.WriteFile(wf, []byte(coverWorkflow), 0o644); err != nil {
				t.Fatal(err)
			}
			for i, in := range tt.inputs {
				c := `{"name": "c` + itoa(i) + `", "workflow": "wf.json", "input": ` + in + `, "expect": {"status": "completed"}}`
				if err := os.WriteFile(filepath.Join(dir, "c"+itoa(i)+".test.json"), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			code := Run(context.Background(), &out, []string{dir}, Options{JSON: true, Cover: true})
			var rep struct{ Cover coverReport }
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || code != ExitPass || len(rep.Cover.Workflows) != 1 {
				t.Fatalf("exit %d, %v:\n%s", code, err, out.String())
			}
			got := rep.Cover.Workflows[0]
			tt.want.Workflow = wf
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("cover:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	// The text report names nested nodes by their paths.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "wf.json"), []byte(coverWorkflow), 0o644)
	os.WriteFile(filepath.Join(dir, "c.test.json"), []byte(`{"workflow": "wf.json", "input": {"items": [1], "n": 0}}`), 0o644)
	var out bytes.Buffer
	Run(context.Background(), &out, []string{dir}, Options{Cover: true})
	if !strings.Contains(out.String(), "when never seen true: each.big, each.huge, review.pos, top") {
		t.Fatalf("report:\n%s", out.String())
	}
}
