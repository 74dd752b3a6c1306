//go:build !nocode

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A runner whose code nodes' worker is missing stops at start, naming the
// path it looked at and how to provide one, instead of advertising code
// nodes it would fail at the first evaluation.
func TestRunRefusesToStartWithoutCodeWorker(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, worker, want string }{
		{"missing", filepath.Join(dir, "codeworker"), filepath.Join(dir, "codeworker")},
		{"a directory", dir, "not a regular file"},
		{"not executable", plain, "not executable"},
		// Unset: codeworker beside the executable, which this test
		// binary does not have.
		{"beside the executable", "", filepath.Join(filepath.Dir(self), "codeworker")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keepMemoryLimit(t)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), nil, runEnv(map[string]string{"RUNNER_TOKENS": "tok", "RUNNER_CODE_WORKER": tt.worker}), &stdout, &stderr)
			if err == nil {
				t.Fatal("run started without a code worker")
			}
			for _, want := range []string{tt.want, "code nodes", "RUNNER_CODE_WORKER", "CODE=off"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
