//go:build unix

package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM (or SIGINT) shuts the runner down cleanly: main installs the
// handler from a goroutine, off the path to serving, and it still ends the
// local server's context, which shuts the server down and exits 0.
func TestSIGTERMShutsDown(t *testing.T) {
	out := &syncBuffer{}
	cmd := exec.Command(bootstrapPath(t))
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"RUNNER_TOKENS=" + testToken, "RUNNER_ADDR=" + freeAddr(t), "HOME=" + cmd.Dir, "RUNNER_CODE_WORKER=" + codeWorkerPath(t)}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	out.waitFor(t, "listening line", func(l map[string]any) bool { return l["msg"] == "listening" })
	// The handler goroutine starts before configuration is even read;
	// leave it a moment on a loaded machine before signalling.
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after SIGTERM\n%s", out.String())
	}
	if !strings.Contains(out.String(), "shutting down") {
		t.Errorf("no shutdown logged:\n%s", out.String())
	}
}
