package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Under Lambda a bad setting fails init through the runtime API, with the
// variable named in the message the first invocation reports.
func TestOpsInitErrorIsReported(t *testing.T) {
	keepMemoryLimit(t)
	got := make(chan map[string]string, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Method == http.MethodPost && r.URL.Path == "/2018-06-01/runtime/init/error" {
			body["header"] = r.Header.Get("Lambda-Runtime-Function-Error-Type")
			got <- body
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer api.Close()
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API": strings.TrimPrefix(api.URL, "http://"),
		"RUNNER_TOKENS":          "tok",
		"RUNNER_MODELS":          `[{"role":"general","provider":"watson","model":"m"}]`,
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), nil, runEnv(env), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "RUNNER_MODELS[0].provider") {
		t.Fatalf("run error = %v, want one naming RUNNER_MODELS[0].provider", err)
	}
	select {
	case body := <-got:
		if !strings.Contains(body["errorMessage"], "RUNNER_MODELS[0].provider") || body["header"] != "Runtime.ConfigurationError" {
			t.Errorf("init error %v", body)
		}
	default:
		t.Fatal("no init error was posted")
	}
}

// -check validates the environment's settings without serving: how an
// operator checks DeploymentModels before deploying.
func TestOpsCheck(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"good", map[string]string{"RUNNER_MODELS": `[{"role":"general","provider":"bedrock","model":"m","region":"us-east-1"}]`}, ""},
		{"bad provider", map[string]string{"RUNNER_MODELS": `[{"role":"general","provider":"watson","model":"m"}]`}, "RUNNER_MODELS[0].provider"},
		{"bad JSON", map[string]string{"RUNNER_MODELS": `[`}, "RUNNER_MODELS"},
		{"bad limit", map[string]string{"RUNNER_MAX_NODES": "-1"}, "RUNNER_MAX_NODES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keepMemoryLimit(t)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"-check"}, runEnv(tt.env), &stdout, &stderr)
			if tt.wantErr == "" {
				if err != nil || stdout.String() != "configuration ok\n" {
					t.Errorf("err %v, stdout %q", err, stdout.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}

// sam build copies the source tree without .git: the makefile target must
// still bake in the commit's version, from RUNNER_VERSION or from the
// VERSION file `make version` wrote. The copy is built for this machine so
// the binary can be run.
func TestOpsVersionWithoutGit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner twice")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	src := copyTree(t, filepath.Join("..", ".."))
	if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
		t.Fatal("the copy has .git")
	}
	tests := []struct {
		name, file, env, want string
	}{
		{"VERSION file", "v1.2.3-4-gabcdef0\n", "", "v1.2.3-4-gabcdef0"},
		{"RUNNER_VERSION wins", "v1.2.3-4-gabcdef0\n", "v2.0.0", "v2.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(src, "VERSION"), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			cmd := exec.Command("make", "build-RunnerFunction", "ARTIFACTS_DIR="+out, "LAMBDA_GOARCH="+runtime.GOARCH)
			cmd.Dir = src
			cmd.Env = append(os.Environ(), "RUNNER_VERSION="+tt.env)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make: %v\n%s", err, b)
			}
			if runtime.GOOS != "linux" {
				t.Skip("built for linux, cannot run here")
			}
			b, err := exec.Command(filepath.Join(out, "bootstrap"), "-version").Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != tt.want {
				t.Errorf("version %q, want %q", got, tt.want)
			}
			// The function's package as sam deploys it: the bootstrap and
			// the code nodes' worker beside it.
			names := []string{}
			if ents, err := os.ReadDir(out); err == nil {
				for _, e := range ents {
					names = append(names, e.Name())
				}
			}
			if want := []string{"bootstrap", "codeworker"}; !slices.Equal(names, want) {
				t.Errorf("ARTIFACTS_DIR holds %q, want %q", names, want)
			}
			// What a deployed stack shows: capabilities of the .git-less
			// build under the Lambda runtime interface emulator, and a code
			// node run by the worker found beside the bootstrap (no
			// RUNNER_CODE_WORKER).
			r := startRIEWith(t, lambdaEnv(t, map[string]string{"RUNNER_CODE_WORKER": ""}), filepath.Join(out, "bootstrap"))
			defer r.stop()
			p, body := r.streamed(t, functionURLEvent("GET", "/v1/capabilities", testToken, ""), "")
			var caps struct{ Runner struct{ Version string } }
			if err := json.Unmarshal(body, &caps); err != nil || p.StatusCode != 200 {
				t.Fatalf("capabilities %d %s: %v", p.StatusCode, body, err)
			}
			if caps.Runner.Version != tt.want {
				t.Errorf("capabilities runner.version %q, want %q", caps.Runner.Version, tt.want)
			}
			_, stream := r.streamed(t, functionURLEvent("POST", "/v1/executions", testToken, codeBody), "")
			if evs := checkStream(t, stream); !strings.Contains(string(stream), `"output":{"c":[10,20,30]}`) {
				t.Errorf("code node beside bootstrap: %v", evs[len(evs)-1])
			}
		})
	}
}

// copyTree copies the repository's files, without .git and build outputs,
// as sam build does.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch d.Name() {
		case ".git", "bin", ".aws-sam", "VERSION":
			if rel != "." {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
