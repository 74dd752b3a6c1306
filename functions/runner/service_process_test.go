//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The local server as a service, as a process: SIGTERM drains the
// executions to their terminal events and exits 0, and 100 executions sent
// at once, each near its memory budget, keep the process under its memory
// with no terminal event lost. Helpers are prefixed svc.

// svcProcess is a local server started from the built runner.
type svcProcess struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	base string
	done chan error
}

func svcStart(t *testing.T, extra map[string]string) *svcProcess {
	t.Helper()
	addr := freeAddr(t)
	p := &svcProcess{out: &syncBuffer{}, base: "http://" + addr, done: make(chan error, 1)}
	p.cmd = exec.Command(bootstrapPath(t))
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = []string{"HOME=" + p.cmd.Dir, "RUNNER_TOKENS=" + testToken, "RUNNER_ADDR=" + addr,
		"RUNNER_CODE_WORKER=" + codeWorkerPath(t)}
	for k, v := range extra {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	p.out.waitFor(t, "listening line", func(l map[string]any) bool { return l["msg"] == "listening" })
	return p
}

// svcClient sends "Expect: 100-continue" requests as a client of large
// bodies should: a refusal before the body is read (401, 503) is then
// received before any of the body is sent, rather than lost to a reset
// connection while the body is still being written.
var svcClient = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: runPatience}}

// post sends an execution and returns the response (the caller closes it).
func (p *svcProcess) post(ctx context.Context, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/v1/executions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Expect", "100-continue")
	return svcClient.Do(req)
}

// peakRSS is the process's high-water resident set (VmHWM), in bytes.
func (p *svcProcess) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

func TestServiceDrainsOnSIGTERM(t *testing.T) {
	tests := []struct {
		name    string
		drain   string // RUNNER_DRAIN_SECONDS
		release bool   // the upstream answers during the drain
		want    string // the terminal event has this
	}{
		{"ends by itself", "30", true, `"status":"completed"`},
		{"cancelled at the bound", "1", false, `CANCELLED`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release, reached := make(chan struct{}), make(chan struct{}, 1)
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached <- struct{}{}
				select {
				case <-release:
					_, _ = io.WriteString(w, "ok")
				case <-r.Context().Done():
				case <-time.After(runPatience):
				}
			}))
			defer upstream.Close()
			defer close(release)
			p := svcStart(t, map[string]string{"RUNNER_DRAIN_SECONDS": tt.drain, "RUNNER_HTTP_ALLOW_CIDRS": "127.0.0.1/32"})
			ctx, cancel := context.WithTimeout(context.Background(), runPatience)
			defer cancel()
			resp, err := p.post(ctx, `{"version":1,"workflow":{"nodes":[{"id":"slow","type":"http","with":{"url":"`+upstream.URL+`"}}]},
				"runtime":{"http":{"policy":{"allowPrivateNetwork":true}}}}`)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			accepted, _ := br.ReadBytes('\n')
			select {
			case <-reached:
			case <-time.After(runPatience):
				t.Fatalf("the http node never reached its server\n%s", p.out)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			p.out.waitFor(t, "shutting down line", func(l map[string]any) bool { return l["msg"] == "shutting down" })
			// Draining: not ready, and new executions refused before
			// acceptance, while the listener still answers.
			if r, err := http.Get(p.base + "/healthz"); err != nil || r.StatusCode != 503 {
				t.Errorf("readiness while draining: %v %v, want 503", r, err)
			} else {
				r.Body.Close()
			}
			if r, err := p.post(ctx, `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]}}`); err != nil {
				t.Errorf("an execution while draining: %v", err)
			} else {
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				if r.StatusCode != 503 || r.Header.Get("Retry-After") == "" || !bytes.Contains(b, []byte("UNAVAILABLE")) {
					t.Errorf("an execution while draining: %d %q %s, want 503 UNAVAILABLE with Retry-After", r.StatusCode, r.Header.Get("Retry-After"), b)
				}
			}
			if tt.release {
				release <- struct{}{}
			}
			rest, _ := io.ReadAll(br)
			body := append(accepted, rest...)
			checkStream(t, body)
			if !bytes.Contains(body, []byte(tt.want)) {
				t.Errorf("stream %s, want a terminal event with %s", body, tt.want)
			}
			select {
			case err := <-p.done:
				p.done <- err // for the cleanup
				if err != nil {
					t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, p.out)
				}
			case <-time.After(runPatience):
				t.Fatalf("still running after SIGTERM\n%s", p.out)
			}
		})
	}
}

// svcHeavy is an execution that holds about 52 MB of node outputs: 13
// strings of 4,000,000 bytes, each built anew from a 1 MB input (a
// request of 1 MB), near the 64 MB memory budget of a 256 MB runner, and
// within each node's 4 MiB output bound.
var svcHeavy = func() string {
	var b strings.Builder
	b.WriteString(`{"version":1,"input":{"s":"` + strings.Repeat("x", 1_000_000) + `"},"workflow":{"nodes":[`)
	for i := range 13 {
		fmt.Fprintf(&b, `{"id":"n%d","type":"set","with":{"value":"${{ input.s + input.s + input.s + input.s }}"}},`, i)
	}
	b.WriteString(`{"id":"sum","type":"set","needs":["n0","n12"],"with":{"value":"${{ len(nodes.n0.output) + len(nodes.n12.output) }}"}}],` +
		`"output":"${{ nodes.sum.output }}"}}`)
	return b.String()
}()

func TestServiceAdmissionBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped under -short")
	}
	const memoryMB, clients = 256, 100
	p := svcStart(t, map[string]string{"RUNNER_MEMORY_MB": strconv.Itoa(memoryMB)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*runPatience)
	defer cancel()
	type outcome struct {
		status int
		retry  string
		body   []byte
		err    error
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		outs  = make([]outcome, clients)
	)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := p.post(ctx, svcHeavy)
			if err != nil {
				outs[i].err = err
				return
			}
			defer resp.Body.Close()
			outs[i].status, outs[i].retry = resp.StatusCode, resp.Header.Get("Retry-After")
			outs[i].body, outs[i].err = io.ReadAll(resp.Body)
		}()
	}
	close(start)
	wg.Wait()
	svcClient.CloseIdleConnections()
	accepted, refused := 0, 0
	for i, o := range outs {
		switch {
		case o.err != nil:
			t.Errorf("client %d: %v", i, o.err)
		case o.status == 200:
			accepted++
			checkStream(t, o.body)
			if !bytes.Contains(o.body, []byte(`"status":"completed","output":8000000`)) {
				t.Errorf("client %d: %.300s", i, o.body[max(0, len(o.body)-300):])
			}
		case o.status == 503:
			refused++
			if o.retry == "" || !bytes.Contains(o.body, []byte(`"UNAVAILABLE"`)) {
				t.Errorf("client %d: 503 %q %s, want Retry-After and UNAVAILABLE", i, o.retry, o.body)
			}
		default:
			t.Errorf("client %d: status %d %s", i, o.status, o.body)
		}
	}
	peak := p.peakRSS(t)
	t.Logf("%d executions at once: %d accepted (each with one terminal event), %d refused 503; peak RSS %d MiB of %d MB",
		clients, accepted, refused, peak>>20, memoryMB)
	if accepted == 0 || accepted+refused != clients {
		t.Errorf("%d accepted, %d refused, of %d", accepted, refused, clients)
	}
	if peak > memoryMB<<20 {
		t.Errorf("peak RSS %d MiB, over the runner's %d MB", peak>>20, memoryMB)
	}
}
