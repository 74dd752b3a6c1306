//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// These tests run distributed maps end to end: the parent is the runner
// (run, in this process) with its real lambda client pointed by
// AWS_ENDPOINT_URL_LAMBDA at lambdaFront, which speaks Lambda's Invoke and
// InvokeWithResponseStream wire formats (the event stream written with the
// SDK's own eventstream encoder) and hands each invocation to a free one
// of several aws-lambda-rie processes running the built bootstrap. The
// emulator answers only when the invocation has ended, so a child's lines
// reach the parent at its end.

// lambdaFront is a Lambda-compatible endpoint for function "runner".
type lambdaFront struct {
	pool chan *rie
	// throttle answers that many of the next invocations with 429.
	throttle atomic.Int64
	// fail answers every invocation with a function error.
	fail atomic.Bool

	running, peak atomic.Int64
	throttled     atomic.Int64

	mu       sync.Mutex
	served   map[string]int // invocations per emulator
	payloads []string       // events received
	answers  []string       // what the children wrote
	ended    []time.Time    // when each child's invocation ended
}

func newLambdaFront(t *testing.T, n int, env map[string]string) *lambdaFront {
	f := &lambdaFront{pool: make(chan *rie, n), served: map[string]int{}}
	for range n {
		f.pool <- startRIE(t, lambdaEnv(t, env))
	}
	return f
}

func (f *lambdaFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The two routes, as Lambda's API reference gives them.
	streaming := r.URL.Path == "/2021-11-15/functions/runner/response-streaming-invocations"
	if r.Method != http.MethodPost || !streaming && r.URL.Path != "/2015-03-31/functions/runner/invocations" {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		http.Error(w, `{"Type":"User","message":"Function not found"}`, http.StatusNotFound)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		http.Error(w, `{"message":"unsigned request"}`, http.StatusForbidden)
		return
	}
	payload, _ := io.ReadAll(r.Body)
	if f.throttle.Add(-1) >= 0 {
		f.throttled.Add(1)
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"Type":"User","message":"Rate Exceeded.","Reason":"ReservedFunctionConcurrentInvocationLimitExceeded"}`)
		return
	}
	f.throttle.Store(0)
	var em *rie
	select {
	case em = <-f.pool:
	case <-r.Context().Done():
		return
	}
	defer func() { f.pool <- em }()
	if n := f.running.Add(1); n > f.peak.Load() {
		f.peak.Store(n)
	}
	// The emulator runs the invocation to its end whatever the caller
	// does, as Lambda does for a child whose stream was closed: the child
	// notices at its next write, or at the parent's deadline.
	req, _ := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, em.url, bytes.NewReader(payload))
	resp, err := rieClient.Do(req)
	f.running.Add(-1)
	if err != nil {
		http.Error(w, `{"message":"emulator: `+err.Error()+`"}`, http.StatusBadGateway)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	f.mu.Lock()
	f.served[em.url]++
	f.payloads = append(f.payloads, string(payload))
	f.answers = append(f.answers, string(body))
	f.ended = append(f.ended, time.Now())
	f.mu.Unlock()
	funcErr := resp.Header.Get("X-Amz-Function-Error")
	if funcErr == "" && bytes.HasPrefix(body, []byte(`{"errorMessage"`)) || f.fail.Load() {
		funcErr = "Unhandled"
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if !streaming {
		if funcErr != "" {
			w.Header().Set("X-Amz-Function-Error", funcErr)
		}
		w.Write(body)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	event := func(typ, contentType string, payload []byte) {
		_ = enc.Encode(w, eventstream.Message{Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue(typ)},
			{Name: ":content-type", Value: eventstream.StringValue(contentType)},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		}, Payload: payload})
		w.(http.Flusher).Flush()
	}
	if funcErr == "" {
		// One chunk per line, cut mid-line too: the parent must rejoin.
		for line := range bytes.Lines(body) {
			half := len(line) / 2
			event("PayloadChunk", "application/octet-stream", line[:half])
			event("PayloadChunk", "application/octet-stream", line[half:])
		}
		event("InvokeComplete", "application/json", []byte(`{}`))
		return
	}
	details, _ := json.Marshal(string(body))
	event("InvokeComplete", "application/json", []byte(`{"ErrorCode":"`+funcErr+`","ErrorDetails":`+string(details)+`}`))
}

func (f *lambdaFront) invocations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.payloads)
}

// slowServer answers /wait after ms milliseconds with what it was sent.
func slowServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ms int
		fmt.Sscan(r.URL.Query().Get("ms"), &ms)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header()["Date"] = nil // the same answer in and out of process
		fmt.Fprintf(w, `{"item":%q,"auth":%d}`, r.URL.Query().Get("item"), len(r.Header.Get("Authorization")))
	}))
	t.Cleanup(srv.Close)
	return srv
}

const fanSecret = "fan-0ut-s3cret-value"

// fanBody is an execution whose map calls srv for each of n items, each
// call waiting ms, with distribute set (dist) or not ("").
func fanBody(srv string, n, ms, conc int, dist string) string {
	if dist != "" {
		dist = `"distribute":` + dist + `,`
	}
	return fmt.Sprintf(`{"version":1,"input":{"n":%d},"trace":true,"permissions":["http:127.0.0.1"],
		"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"tok":%q}}},
		"workflow":{"nodes":[{"id":"pre","type":"set","with":{"value":"p"}},
		{"id":"each","type":"map","needs":["pre"],"with":{"items":"${{ 1..input.n }}","concurrency":%d,%s"nodes":[
			{"id":"get","type":"http","with":{"url":"%s/wait?ms=%d&item=${{ item }}-${{ index }}-${{ nodes.pre.output }}","headers":{"Authorization":"Bearer ${{ secrets.tok }}"}}},
			{"id":"echo","type":"set","needs":["get"],"with":{"value":"${{ nodes.get.output.body.item }}"}}],
		"output":"${{ nodes.echo.output }}"}}],"output":"${{ nodes.each.output }}"}}`, n, fanSecret, conc, dist, srv, ms)
}

// fanParent starts the parent runner, its lambda client pointed at front.
func fanParent(t *testing.T, front string, timeoutS int) *server {
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", front)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTESTFANOUT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fanout-secret-key")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return startRun(t, nil, map[string]string{
		"RUNNER_TOKENS": testToken, "RUNNER_MAX_FANOUT_INVOCATIONS": "4", "RUNNER_FANOUT_FUNCTION": "runner",
		"RUNNER_TIMEOUT_SECONDS": fmt.Sprint(timeoutS),
	})
}

// fanExecute posts body to s and returns the stream's events.
func fanExecute(t *testing.T, s *server, body string) []map[string]any {
	t.Helper()
	resp := fanPost(t, s, body)
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		if strings.Contains(sc.Text(), fanSecret) {
			t.Errorf("the secret is in the parent's stream: %s", sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

func fanPost(t *testing.T, s *server, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/v1/executions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp
}

// fanKeys lists what identifies each event, sorted, times left out.
func fanKeys(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		delete(ev, "at")
		delete(ev, "durationMs")
		delete(ev, "executionId")
		b, _ := json.Marshal(ev)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

func terminal(t *testing.T, evs []map[string]any) map[string]any {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	n := 0
	for _, ev := range evs {
		if ev["type"] == "result" || ev["type"] == "error" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d terminal events", n)
	}
	return last
}

func TestFanOutUnderRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three emulators")
	}
	srv := slowServer(t)
	lf := newLambdaFront(t, 3, nil)
	front := httptest.NewServer(lf)
	defer front.Close()
	parent := fanParent(t, front.URL, 20)

	t.Run("the endpoint speaks Invoke to the real client", func(t *testing.T) {
		c := lambda.New(lambda.Options{Region: "eu-west-1", BaseEndpoint: aws.String(front.URL),
			Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
		out, err := c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("runner"), Payload: []byte(`{"not":"an http event"}`)})
		if err != nil || out.FunctionError == nil {
			t.Errorf("Invoke: %v, function error %v", err, out)
		}
	})

	t.Run("events, output and usage equal the in-process map's", func(t *testing.T) {
		local := fanExecute(t, parent, fanBody(srv.URL, 8, 400, 2, ""))
		before := lf.invocations()
		began := time.Now()
		dist := fanExecute(t, parent, fanBody(srv.URL, 8, 400, 2, `{"batchSize":2,"invocations":4}`))
		took := time.Since(began)
		if n := lf.invocations() - before; n != 4 {
			t.Errorf("%d child invocations, want 4", n)
		}
		res := terminal(t, dist)
		if res["type"] != "result" || res["status"] != "completed" {
			t.Fatalf("terminal %v", res)
		}
		a, b := fanKeys(local), fanKeys(dist)
		if !slices.Equal(a, b) {
			t.Errorf("events differ\nin process:\n  %s\ndistributed:\n  %s", strings.Join(a, "\n  "), strings.Join(b, "\n  "))
		}
		if lf.peak.Load() < 2 || len(lf.served) < 2 {
			t.Errorf("batches ran %d at once in %d processes, want at least 2 of each", lf.peak.Load(), len(lf.served))
		}
		t.Logf("distributed in %s over %d emulators, %d at once", took, len(lf.served), lf.peak.Load())
		lf.mu.Lock()
		for _, s := range lf.answers {
			if strings.Contains(s, fanSecret) {
				t.Errorf("the secret is in a child's stream")
			}
		}
		lf.mu.Unlock()
	})

	t.Run("a throttled invocation is retried", func(t *testing.T) {
		lf.throttle.Store(3)
		before := lf.throttled.Load()
		evs := fanExecute(t, parent, fanBody(srv.URL, 4, 10, 2, `{"batchSize":2,"invocations":2}`))
		if res := terminal(t, evs); res["status"] != "completed" {
			t.Fatalf("terminal %v", res)
		}
		if n := lf.throttled.Load() - before; n != 3 {
			t.Errorf("%d throttled answers, want 3", n)
		}
	})

	t.Run("a failing item ends the execution in-band naming it", func(t *testing.T) {
		body := strings.Replace(fanBody(srv.URL, 6, 10, 1, `{"batchSize":2,"invocations":2}`),
			`{"id":"echo"`, `{"id":"boom","type":"fail","needs":["get"],"when":"index == 3","with":{"message":"bad ${{ item }}"}},{"id":"echo"`, 1)
		res := terminal(t, fanExecute(t, parent, body))
		e, _ := res["error"].(map[string]any)
		if res["type"] != "error" || e["nodeId"] != "each[3].boom" || !strings.Contains(fmt.Sprint(e["message"]), "bad 4") {
			t.Errorf("terminal %v", res)
		}
	})

	t.Run("a function error fails the map with INVOCATION_FAILED", func(t *testing.T) {
		lf.fail.Store(true)
		defer lf.fail.Store(false)
		res := terminal(t, fanExecute(t, parent, fanBody(srv.URL, 2, 10, 1, `{"invocations":1}`)))
		e, _ := res["error"].(map[string]any)
		if res["type"] != "error" || !strings.Contains(fmt.Sprint(e["message"]), "INVOCATION_FAILED") || e["nodeId"] != "each" {
			t.Errorf("terminal %v", res)
		}
	})
}

// TestFanOutUnderRIEDeadlineAndDisconnect: a child past the parent's
// deadline ends the execution in-band, and a client that leaves stops
// new batches while the children end at the parent's deadline.
func TestFanOutUnderRIEDeadlineAndDisconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two emulators")
	}
	srv := slowServer(t)
	lf := newLambdaFront(t, 2, nil)
	front := httptest.NewServer(lf)
	defer front.Close()
	const timeout = 4
	parent := fanParent(t, front.URL, timeout)

	t.Run("deadline", func(t *testing.T) {
		began := time.Now()
		res := terminal(t, fanExecute(t, parent, fanBody(srv.URL, 2, 60_000, 1, `{"batchSize":1,"invocations":2}`)))
		e, _ := res["error"].(map[string]any)
		if res["type"] != "error" || !strings.Contains(fmt.Sprint(e["message"]), "deadline exceeded") {
			t.Errorf("terminal %v", res)
		}
		if took := time.Since(began); took > (timeout+2)*time.Second {
			t.Errorf("the execution ended after %s", took)
		}
	})

	t.Run("disconnect", func(t *testing.T) {
		// The last test's children end at its deadline: wait for them.
		for end := time.Now().Add(10 * time.Second); len(lf.pool) < cap(lf.pool) && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		before := lf.invocations()
		began := time.Now()
		resp := fanPost(t, parent, fanBody(srv.URL, 12, 60_000, 1, `{"batchSize":1,"invocations":2}`))
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil { // accepted
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		resp.Body.Close()
		// The children were running; they end at the parent's deadline,
		// and no batch starts after the disconnect.
		deadline := began.Add(timeout * time.Second)
		for lf.invocations()-before < 2 && time.Now().Before(deadline.Add(5*time.Second)) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second)
		if n := lf.invocations() - before; n != 2 {
			t.Errorf("%d child invocations ended, want the 2 that ran at the disconnect", n)
		}
		lf.mu.Lock()
		defer lf.mu.Unlock()
		for _, at := range lf.ended[before:] {
			if at.After(deadline.Add(2 * time.Second)) {
				t.Errorf("a child ended %s after the parent's deadline", at.Sub(deadline))
			}
		}
	})
}
