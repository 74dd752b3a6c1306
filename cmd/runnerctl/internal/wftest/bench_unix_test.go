//go:build unix

package wftest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// twentyNodes is a workflow of 20 nodes: 8 model calls, 6 tool calls and
// 6 set nodes, in four layers.
func twentyNodes(provider string) string {
	var nodes []string
	for i := range 8 {
		nodes = append(nodes, fmt.Sprintf(`{"id": "m%d", "type": "model", "with": {"prompt": "say %d"}}`, i, i))
	}
	for i := range 6 {
		nodes = append(nodes, fmt.Sprintf(`{"id": "t%d", "type": "tool", "needs": ["m%d"], "with": {"toolset": "shop", "tool": "get_order", "arguments": {"id": %d}}}`, i, i, i))
	}
	for i := range 6 {
		nodes = append(nodes, fmt.Sprintf(`{"id": "s%d", "type": "set", "needs": ["t%d"], "with": {"value": "${{ nodes.m%d.output.text }} ${{ nodes.t%d.output.content[0].text }}"}}`, i, i, i, i))
	}
	return `{"name": "twenty nodes %d", "workflow": {"nodes": [` + strings.Join(nodes, ",\n") + `], "output": "${{ nodes.s5.output }}"},
  "runtime": {"models": [{"role": "general", "provider": "` + provider + `", "model": "m-1", "region": "us-east-1"}],
              "toolsets": [{"name": "shop", "url": "https://mcp.example.com/mcp"}]},
  "permissions": ["model:general", "tool:shop/*"],
  "toolPolicies": [{"match": "shop/*", "decision": "allow"}],
  "mocks": {"models": [{"role": "general", "replies": [` + strings.Repeat(`{"text": "ok", "usage": {"inputTokens": 3, "outputTokens": 1}},`, 7) + `{"text": "ok"}]}],
            "tools": [{"toolset": "shop", "tool": "get_order", "result": {"content": [{"type": "text", "text": "10"}]}}]},
  "expect": {"status": "completed", "output": "ok 10", "calls": {"models": 8, "tools": 6, "http": 0}}}`
}

// BenchmarkHundredCases runs 100 cases of a 20-node workflow with mocked
// model and tool calls (issue 46: under 2 s on the reference machine).
func BenchmarkHundredCases(b *testing.B) {
	dir := b.TempDir()
	src := twentyNodes(providers()[0])
	for i := range 100 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("c%03d.test.json", i)), []byte(strings.Replace(src, "%d", fmt.Sprint(i), 1)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{0, 1, 8} {
		b.Run(fmt.Sprintf("parallel=%d", n), func(b *testing.B) {
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			for b.Loop() {
				if code := Run(context.Background(), io.Discard, []string{dir}, Options{Parallel: n}); code != ExitPass {
					b.Fatalf("exit %d", code)
				}
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / time.Duration(b.N)
			b.ReportMetric(cpu.Seconds(), "cpu-s/op")
		})
	}
}
