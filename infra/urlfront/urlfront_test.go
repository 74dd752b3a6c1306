package urlfront_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/infra/urlfront"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// invokeAPI answers every invocation with answer, after recording the
// event.
func invokeAPI(t *testing.T, got *events.LambdaFunctionURLRequest, answer string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/2015-03-31/functions/function/invocations" {
			http.NotFound(w, r)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(got); err != nil {
			t.Errorf("event: %v", err)
		}
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFront(t *testing.T) {
	tests := []struct {
		name, answer string
		status       int
		header, body string
	}{
		{"streamed", `{"statusCode":201,"headers":{"Content-Type":"application/x-ndjson"},"cookies":["a=b"]}` + strings.Repeat("\x00", 8) + "{\"x\":1}\n\x00tail",
			201, "application/x-ndjson", "{\"x\":1}\n\x00tail"},
		{"buffered", `{"statusCode":401,"headers":{"Content-Type":"application/json"},"body":"{\"error\":{}}"}`, 401, "application/json", `{"error":{}}`},
		{"buffered base64", `{"statusCode":200,"headers":{"Content-Type":"text/plain"},"body":"` + base64.StdEncoding.EncodeToString([]byte("hi")) + `","isBase64Encoded":true}`, 200, "text/plain", "hi"},
		{"function error", `{"errorType":"Runtime.ConfigurationError","errorMessage":"RUNNER_MODELS: bad"}`, 502, "text/plain; charset=utf-8", "front: the function failed: Runtime.ConfigurationError: RUNNER_MODELS: bad\n"},
		{"neither", `hello`, 502, "text/plain; charset=utf-8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ev events.LambdaFunctionURLRequest
			api := invokeAPI(t, &ev, tt.answer)
			front := httptest.NewServer(&urlfront.Front{Invoke: api.URL + "/2015-03-31/functions/function/invocations"})
			defer front.Close()
			req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/executions?a=1&a=2", strings.NewReader("\xff\xfe"))
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Add("X-Multi", "1")
			req.Header.Add("X-Multi", "2")
			req.AddCookie(&http.Cookie{Name: "c", Value: "d"})
			resp, err := front.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.header || (tt.body != "" && string(body) != tt.body) {
				t.Errorf("answered %d %q %q; want %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status, tt.header, tt.body)
			}
			if tt.name == "streamed" && resp.Header.Get("Set-Cookie") != "a=b" {
				t.Errorf("Set-Cookie %q", resp.Header.Get("Set-Cookie"))
			}
			// The event is a function URL's.
			raw, _ := base64.StdEncoding.DecodeString(ev.Body)
			if ev.Version != "2.0" || ev.RawPath != "/v1/executions" || ev.RawQueryString != "a=1&a=2" || ev.QueryStringParameters["a"] != "1,2" ||
				ev.Headers["authorization"] != "Bearer tok" || ev.Headers["x-multi"] != "1,2" || ev.Headers["cookie"] != "" ||
				len(ev.Cookies) != 1 || ev.Cookies[0] != "c=d" || !ev.IsBase64Encoded || string(raw) != "\xff\xfe" ||
				ev.RequestContext.HTTP.Method != "POST" || !strings.Contains(ev.RequestContext.DomainName, ".lambda-url.") ||
				ev.RequestContext.HTTP.SourceIP != "127.0.0.1" {
				t.Errorf("event %+v", ev)
			}
		})
	}
}

// A body over Lambda's payload limit is refused before any invocation.
func TestFrontRequestLimit(t *testing.T) {
	var ev events.LambdaFunctionURLRequest
	api := invokeAPI(t, &ev, `{"statusCode":200}`)
	front := httptest.NewServer(&urlfront.Front{Invoke: api.URL + "/2015-03-31/functions/function/invocations"})
	defer front.Close()
	resp, err := http.Post(front.URL+"/v1/executions", "application/json", strings.NewReader(strings.Repeat("x", urlfront.MaxRequestBytes+1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || ev.Version != "" {
		t.Errorf("status %d, event %+v", resp.StatusCode, ev)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestSplit(t *testing.T) {
	p, body, err := urlfront.Split([]byte(`{"statusCode":200,"headers":{"A":"b"}}` + strings.Repeat("\x00", 8) + "body"))
	if err != nil || p.StatusCode != 200 || p.Headers["A"] != "b" || string(body) != "body" {
		t.Errorf("Split = %+v, %q, %v", p, body, err)
	}
	if _, _, err := urlfront.Split([]byte(`{"statusCode":200}`)); err == nil {
		t.Error("no separator: no error")
	}
}
