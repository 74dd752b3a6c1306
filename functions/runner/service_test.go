//go:build !nocode

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/protocol"
)

// The local server as a service: the names its API answers to, the
// readiness route, admission advertised, and -dev / -check with and
// without the code nodes' worker. Helpers are prefixed service.

// serviceGet sends method path to s with host as the Host header, token
// (if any) and extra headers, and returns the status and body.
func serviceDo(t *testing.T, s *server, method, path, host, token string, hdr map[string]string, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestRunAPIHosts(t *testing.T) {
	type probe struct {
		method, path, host string
		hdr                map[string]string
		want               int
	}
	caps := func(host string, want int) probe { return probe{"GET", protocol.PathCapabilities, host, nil, want} }
	page := func(host string, want int) probe { return probe{"GET", "/playground/", host, nil, want} }
	health := func(host string) probe { return probe{"GET", functions.PathHealth, host, nil, 200} }
	tests := []struct {
		name   string
		args   []string
		vars   map[string]string
		probes []probe
	}{
		{"tokens, any name", nil, map[string]string{"RUNNER_TOKENS": "alpha"}, []probe{
			caps("runner.internal:8080", 200), caps("10.1.2.3", 200), caps("127.0.0.1", 200),
			// The page stays the loopback's: a rebound name gets nothing.
			page("runner.internal:8080", 403), page("127.0.0.1", 200),
			health("runner.internal"),
			// Browsers' cross-site writes are refused whatever the name.
			{"POST", protocol.PathExecutions, "runner.internal", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		}},
		{"tokens, listed names", nil, map[string]string{"RUNNER_TOKENS": "alpha", "RUNNER_ALLOWED_HOSTS": "runner.internal, *.svc.local"}, []probe{
			caps("runner.internal:8080", 200), caps("RUNNER.INTERNAL.", 200), caps("a.svc.local", 200), caps("b.a.svc.local:80", 200),
			caps("svc.local", 403), caps("other.example", 403), caps("127.0.0.1", 403),
			page("runner.internal", 403), health("10.0.0.9:8080"),
		}},
		{"-dev", []string{"-dev"}, map[string]string{"RUNNER_TOKENS": "alpha"}, []probe{
			caps("127.0.0.1", 200), caps("localhost:1", 200), caps("[::1]:8080", 200),
			caps("runner.internal", 403), caps("evil.example", 403), page("evil.example", 403),
			health("evil.example"),
		}},
		{"-dev, listed names", []string{"-dev"}, map[string]string{"RUNNER_TOKENS": "alpha", "RUNNER_ALLOWED_HOSTS": "runner.internal"}, []probe{
			caps("runner.internal", 200), caps("127.0.0.1", 200), caps("evil.example", 403), page("runner.internal", 403),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startRun(t, tt.args, tt.vars)
			for _, p := range tt.probes {
				token := "alpha"
				if p.path == functions.PathHealth {
					token = ""
				}
				got, body := serviceDo(t, s, p.method, p.path, p.host, token, p.hdr, "")
				if got != p.want {
					t.Errorf("%s %s, Host %q: status %d, want %d: %.200s", p.method, p.path, p.host, got, p.want, body)
				}
				if got == 403 && !bytes.Contains(body, []byte(`"FORBIDDEN"`)) {
					t.Errorf("%s %s, Host %q: refusal %q, want a FORBIDDEN error body", p.method, p.path, p.host, body)
				}
			}
		})
	}
}

// serviceCaps returns the server's capabilities.
func serviceCaps(t *testing.T, s *server) protocol.Capabilities {
	t.Helper()
	status, body := serviceDo(t, s, "GET", protocol.PathCapabilities, "127.0.0.1", "alpha", nil, "")
	var c protocol.Capabilities
	if err := json.Unmarshal(body, &c); status != 200 || err != nil {
		t.Fatalf("capabilities: %d %v %.200s", status, err, body)
	}
	return c
}

func TestRunAdvertisesMaxExecutions(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want int
	}{
		{map[string]string{"RUNNER_TOKENS": "alpha"}, 2},
		{map[string]string{"RUNNER_TOKENS": "alpha", "RUNNER_MAX_EXECUTIONS": "40"}, 40},
		{map[string]string{"RUNNER_TOKENS": "alpha", "RUNNER_MEMORY_MB": "1024", "RUNNER_MEMORY_BUDGET_BYTES": "33554432"}, 16},
	}
	for _, tt := range tests {
		s := startRun(t, nil, tt.vars)
		if got := serviceCaps(t, s).Constraints.MaxExecutions; got != tt.want {
			t.Errorf("%v: maxExecutions %d, want %d", tt.vars, got, tt.want)
		}
	}
}

// go run ./functions/runner -dev has no worker beside it: it starts, says
// so once, and offers no code node; a code node is then a 400 naming it.
func TestRunDevWithoutCodeWorker(t *testing.T) {
	for _, worker := range []string{"", "/nonexistent/codeworker"} {
		t.Run("RUNNER_CODE_WORKER="+worker, func(t *testing.T) {
			s := startRun(t, []string{"-dev"}, map[string]string{"RUNNER_TOKENS": "alpha", "RUNNER_CODE_WORKER": worker})
			c := serviceCaps(t, s)
			if slices.Contains(c.NodeTypes, "code") || !slices.Contains(c.NodeTypes, "set") {
				t.Errorf("nodeTypes %q, want no code and the others", c.NodeTypes)
			}
			if n := strings.Count(s.stderr.String(), "code nodes are off"); n != 1 {
				t.Errorf("warned %d times, want once:\n%s", n, s.stderr)
			}
			status, body := serviceDo(t, s, "POST", protocol.PathExecutions, "127.0.0.1", "alpha", nil,
				`{"version":1,"workflow":{"nodes":[{"id":"js","type":"code","with":{"code":"return 1"}}]}}`)
			if status != 400 || !bytes.Contains(body, []byte(`node \"js\"`)) || !bytes.Contains(body, []byte("INVALID_EXECUTION")) {
				t.Errorf("a code node: %d %s, want a 400 naming the node", status, body)
			}
		})
	}
}

// runner -check fails as starting would: a missing worker is an error
// naming RUNNER_CODE_WORKER (under -dev, a warning).
func TestRunCheckVerifiesTheCodeWorker(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		worker string // "-": this test binary, a worker
		ok     bool
		want   string // in the error, or in stderr when ok
	}{
		{"a worker", []string{"-check"}, "-", true, ""},
		{"named and missing", []string{"-check"}, "/nonexistent", false, "RUNNER_CODE_WORKER: code nodes"},
		{"unset, none beside", []string{"-check"}, "", false, "RUNNER_CODE_WORKER"},
		{"-dev, missing", []string{"-dev", "-check"}, "/nonexistent", true, "code nodes are off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keepMemoryLimit(t)
			vars := map[string]string{"RUNNER_TOKENS": "tok"}
			if tt.worker != "-" {
				vars["RUNNER_CODE_WORKER"] = tt.worker
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, runEnv(vars), &stdout, &stderr)
			if ok := err == nil && strings.Contains(stdout.String(), "configuration ok"); ok != tt.ok {
				t.Fatalf("err %v, stdout %q: want ok %v", err, stdout.String(), tt.ok)
			}
			switch {
			case !tt.ok && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q does not name %q", err, tt.want)
			case tt.ok && !strings.Contains(stderr.String(), tt.want):
				t.Errorf("stderr %q does not say %q", stderr.String(), tt.want)
			}
		})
	}
}
