package samtemplate_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

const eventsDir = "../../events"

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// The local API template serves what `sam build` made from the real one,
// with the same runtime and the same environment names.
func TestLocalAPITemplate(t *testing.T) {
	main := load(t, templatePath, nil)
	local := load(t, localAPIPath, nil)
	fn, want := local.fn, main.fn

	// sam build writes each function to .aws-sam/build/<logical id>.
	if fn.CodeUri == nil || fn.CodeUri.String == nil || *fn.CodeUri.String != "../.aws-sam/build/"+functionID {
		t.Errorf("CodeUri = %v, want the sam build artifact of %s", fn.CodeUri, functionID)
	}
	if deref(fn.Runtime) != deref(want.Runtime) || deref(fn.Handler) != deref(want.Handler) ||
		!slices.Equal(fn.Architectures, want.Architectures) {
		t.Errorf("runtime %v/%v/%v differs from template.yaml's %v/%v/%v",
			deref(fn.Runtime), deref(fn.Handler), fn.Architectures,
			deref(want.Runtime), deref(want.Handler), want.Architectures)
	}
	for name := range main.env() {
		if _, ok := local.env()[name]; !ok {
			t.Errorf("local API template lacks %s, so events/env.json cannot set it there", name)
		}
	}
	if local.env()["RUNNER_TOKEN_SECRET_ID"] != "" || local.env()["RUNNER_TOKENS"] == "" {
		t.Error("local API template must use RUNNER_TOKENS, not Secrets Manager")
	}
	if fn.FunctionUrlConfig != nil {
		t.Error("local API template has a function URL")
	}

	routes := map[string]string{}
	for name, ev := range fn.Events {
		if ev.Type != "HttpApi" || ev.Properties == nil || ev.Properties.HttpApiEvent == nil {
			t.Errorf("event %s is %s, want HttpApi", name, ev.Type)
			continue
		}
		h := ev.Properties.HttpApiEvent
		routes[deref(h.Path).(string)] = deref(h.Method).(string)
	}
	for path, method := range map[string]string{"/v1/capabilities": "GET", "/v1/executions": "POST"} {
		if got := routes[path]; !strings.EqualFold(got, method) {
			t.Errorf("route %s: method %q, want %s", path, got, method)
		}
	}
}

func TestLocalEvents(t *testing.T) {
	var env map[string]map[string]string
	readJSON(t, "env.json", &env)
	vars, ok := env[functionID]
	if !ok {
		t.Fatalf("env.json has no %s entry: %v", functionID, slices.Collect(maps.Keys(env)))
	}
	declared := load(t, templatePath, nil).env()
	for name := range vars {
		// SAM only overrides variables the template declares.
		if _, ok := declared[name]; !ok {
			t.Errorf("env.json sets %s, which template.yaml does not declare; sam local would ignore it", name)
		}
	}
	if v, ok := vars["RUNNER_TOKEN_SECRET_ID"]; !ok || v != "" {
		t.Errorf("env.json must clear RUNNER_TOKEN_SECRET_ID, got %q", v)
	}
	localTokens := strings.Split(vars["RUNNER_TOKENS"], ",")

	var body json.RawMessage
	readJSON(t, "hello-execution.json", &body)

	tests := []struct {
		file        string
		method      string
		path        string
		tokenValid  bool
		wantBody    bool
		contentType string
	}{
		{"capabilities.json", "GET", "/v1/capabilities", true, false, ""},
		{"execution.json", "POST", "/v1/executions", true, true, "application/json"},
		{"execution-bad-token.json", "POST", "/v1/executions", false, true, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var ev events.LambdaFunctionURLRequest
			readJSON(t, tt.file, &ev)
			if ev.Version != "2.0" || ev.RawPath != tt.path || ev.RequestContext.HTTP.Path != tt.path ||
				ev.RequestContext.HTTP.Method != tt.method || ev.IsBase64Encoded {
				t.Errorf("version %q, %s %s (context path %s), base64 %v; want 2.0, %s %s, false",
					ev.Version, ev.RequestContext.HTTP.Method, ev.RawPath, ev.RequestContext.HTTP.Path,
					ev.IsBase64Encoded, tt.method, tt.path)
			}
			if !strings.HasSuffix(ev.RequestContext.DomainName, ".on.aws") || ev.RequestContext.DomainPrefix != ev.RequestContext.APIID {
				t.Errorf("domain %q / prefix %q / apiId %q is not a function URL's", ev.RequestContext.DomainName,
					ev.RequestContext.DomainPrefix, ev.RequestContext.APIID)
			}
			for name := range ev.Headers {
				if name != strings.ToLower(name) {
					t.Errorf("header %q: function URLs lower-case header names", name)
				}
			}
			token, ok := strings.CutPrefix(ev.Headers["authorization"], "Bearer ")
			if !ok || token == "" {
				t.Fatalf("authorization %q is not a bearer token", ev.Headers["authorization"])
			}
			if got := slices.Contains(localTokens, token); got != tt.tokenValid {
				t.Errorf("token accepted by env.json = %v, want %v", got, tt.tokenValid)
			}
			if got := ev.Headers["content-type"]; got != tt.contentType {
				t.Errorf("content-type %q, want %q", got, tt.contentType)
			}
			if !tt.wantBody {
				if ev.Body != "" {
					t.Errorf("unexpected body %q", ev.Body)
				}
				return
			}
			var got, want any
			if err := json.Unmarshal([]byte(ev.Body), &got); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			json.Unmarshal(body, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("body differs from hello-execution.json:\n%s", ev.Body)
			}
		})
	}
}
