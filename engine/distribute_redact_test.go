package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// secretBody is a request of wf (SRV its server's URL) with secret k bound
// to 127.0.0.1.
func secretBody(wf, srv, secret string) string {
	return `{"version":1,"workflow":` + strings.ReplaceAll(wf, "SRV", srv) + `,"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"k":{"value":"` + secret + `","hosts":["127.0.0.1"]}}}},"permissions":["http:127.0.0.1"],"trace":true}`
}

// credServer counts the distinct X-Cred values it is sent.
type credServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]bool
}

func newCredServer(t *testing.T) *credServer {
	c := &credServer{seen: map[string]bool{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen[r.Header.Get("X-Cred")] = true
		c.mu.Unlock()
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *credServer) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// TestDistributeLearnedCapsAcrossBatches: the bounds on values built from
// secrets are the execution's, however many batches learn them. Each of 40
// iterations derives a value of its own (its shadow's length differs); in
// process the map fails LIMIT_EXCEEDED once the bytes of their shadows pass
// 128 KiB. Distributed in 40 batches of 1 (the caps were per process, so
// each batch learned 1), it completed and sent all 40; now each batch is
// lent a share of what is left, and the execution learns and sends no more
// than its bounds allow.
func TestDistributeLearnedCapsAcrossBatches(t *testing.T) {
	const secret = "caps-s3cret-value"
	wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..40 }}",DIST"nodes":[
		{"id":"send","type":"http","with":{"url":"SRV/x","headers":{"X-Cred":"${{ toBase64(secrets.k + repeat('x', item) + secrets.k) }}"}}}]}}]}`
	for _, mode := range []string{"in process", "distributed"} {
		t.Run(mode, func(t *testing.T) {
			srv := newCredServer(t)
			var e *Engine
			dist := ""
			var fo *pipeFanOut
			if mode == "in process" {
				e, _ = wtEngine(nil)
			} else {
				e, fo = fanEngines(nil)
				dist = `"distribute":{"batchSize":1,"invocations":8},`
			}
			x, err := e.PrepareBody([]byte(secretBody(strings.Replace(wf, "DIST", dist, 1), srv.URL, secret)))
			if err != nil {
				t.Fatal(err)
			}
			s := &recSink{}
			x.Run(context.Background(), s)
			text := streamText(s)
			used, reserved := x.redact.Usage()
			keys, worst := used.Keys, used.Worst
			calls := int64(0)
			if fo != nil {
				calls = fo.calls.Load()
			}
			t.Logf("%d invocations; the host got %d distinct values; the parent learned %d shadows, %d bytes; %s", calls, srv.distinct(), keys, worst, rtLastLine(text))
			if !strings.Contains(rtLastLine(text), "LIMIT_EXCEEDED") {
				t.Errorf("the map did not fail LIMIT_EXCEEDED: %s", rtLastLine(text))
			}
			if keys > secrets.Bounds().Keys || worst > secrets.Bounds().Worst {
				t.Errorf("the execution learned %d shadows, %d bytes: over its bounds (%d, %d)", keys, worst, secrets.Bounds().Keys, secrets.Bounds().Worst)
			}
			if n := srv.distinct(); n > keys {
				t.Errorf("the host got %d distinct values built from the secret, the execution learned %d", n, keys)
			}
			if reserved != (secrets.Caps{}) {
				t.Errorf("shares still reserved after the map: %+v", reserved)
			}
		})
	}
}

// TestDistributeSameLearnedValueEveryBatch: the same credential sent by
// every batch is one value of the execution's bounds, not one per batch:
// 24 batches on 8 invocations complete.
func TestDistributeSameLearnedValueEveryBatch(t *testing.T) {
	srv := newCredServer(t)
	wf := `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..24 }}","distribute":{"batchSize":1,"invocations":8},"nodes":[
		{"id":"send","type":"http","with":{"url":"SRV/x","headers":{"X-Cred":"Basic ${{ toBase64('user:' + secrets.k) }}"}}}]}}]}`
	e, _ := fanEngines(nil)
	x, err := e.PrepareBody([]byte(secretBody(wf, srv.URL, "same-s3cret-value")))
	if err != nil {
		t.Fatal(err)
	}
	s := &recSink{}
	x.Run(context.Background(), s)
	if last := rtLastLine(streamText(s)); !strings.Contains(last, `"status":"completed"`) {
		t.Fatalf("did not complete: %s", last)
	}
	used, reserved := x.redact.Usage()
	if used.Keys != 1 || reserved != (secrets.Caps{}) {
		t.Errorf("the parent learned %d shadows (want 1), %+v still reserved", used.Keys, reserved)
	}
}

// teeFanOut runs each batch in child, recording what the child writes and
// whether it has written a private line yet.
type teeFanOut struct {
	child    *Engine
	mu       sync.Mutex
	raw      bytes.Buffer
	reported atomic.Bool
}

type teeWriter struct {
	w io.Writer
	f *teeFanOut
}

func (tw *teeWriter) Write(p []byte) (int, error) {
	tw.f.mu.Lock()
	tw.f.raw.Write(p)
	tw.f.mu.Unlock()
	if bytes.Contains(p, []byte(`"type":"`+batch.LearnedType+`"`)) {
		tw.f.reported.Store(true)
	}
	return tw.w.Write(p)
}

func (f *teeFanOut) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(f.child.ServeBatch(ctx, payload, &teeWriter{w: pw, f: f})) }()
	return pr, nil
}

// TestDistributeLearnedLinesPrivate: a child reports what it learned on a
// private line, written before the request that carries the value is sent;
// the parent learns it and passes it on to neither the client's stream nor
// the logs, where neither the credential nor the line's base64 of it
// appears.
func TestDistributeLearnedLinesPrivate(t *testing.T) {
	const secret = "priv-s3cret-value-42"
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + secret))
	var early atomic.Int64
	tf := &teeFanOut{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" && !tf.reported.Load() {
			early.Add(1)
		}
		fmt.Fprintf(w, `{"echo":%q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	wf := `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2,3],"distribute":{"batchSize":1,"invocations":3},"nodes":[
		{"id":"send","type":"http","with":{"url":"SRV/x","headers":{"Authorization":"Basic ${{ toBase64('user:' + secrets.k) }}"}}}]}}]}`
	parent, fo := fanEngines(nil)
	tf.child = fo.child
	parent.Services.FanOut = tf
	var logs bytes.Buffer
	var logMu sync.Mutex
	parent.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	x, err := parent.PrepareBody([]byte(secretBody(wf, srv.URL, secret)))
	if err != nil {
		t.Fatal(err)
	}
	var client bytes.Buffer
	w := protocol.NewWriter(&client, "exec-1", nil)
	x.Run(context.Background(), w)

	tf.mu.Lock()
	raw := tf.raw.String()
	tf.mu.Unlock()
	if !strings.Contains(raw, `"type":"`+batch.LearnedType+`"`) {
		t.Fatalf("no child wrote a %s line:\n%s", batch.LearnedType, raw)
	}
	if n := early.Load(); n > 0 {
		t.Errorf("%d requests carried the credential before their batch reported it", n)
	}
	logMu.Lock()
	logText := logs.String()
	logMu.Unlock()
	// The private line carries the learned value base64-encoded.
	var forms []string
	for _, l := range strings.Split(raw, "\n") {
		if !strings.Contains(l, batch.LearnedType) {
			continue
		}
		i := strings.Index(l, `"values":["`)
		if i < 0 {
			continue
		}
		v := l[i+len(`"values":["`):]
		forms = append(forms, v[:strings.IndexByte(v, '"')])
	}
	if len(forms) == 0 {
		t.Fatalf("no learned value in the private lines:\n%s", raw)
	}
	for where, text := range map[string]string{"client stream": client.String(), "logs": logText} {
		if strings.Contains(text, batch.LearnedType) {
			t.Errorf("the %s has a %s line", where, batch.LearnedType)
		}
		if strings.Contains(text, basic) || strings.Contains(text, secret) {
			t.Errorf("the %s holds the credential", where)
		}
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("the %s holds what a private line carried (%s)", where, f)
			}
		}
	}
	if !strings.Contains(client.String(), `"status":"completed"`) {
		t.Errorf("did not complete:\n%s", client.String())
	}
	if !strings.Contains(client.String(), `Basic dXNlcj[REDACTED]`) {
		t.Errorf("the echoed credential is not redacted in the client stream:\n%s", client.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// failOnLearned fails the write of a private line, as a stream the parent
// has closed would.
type failOnLearned struct{ w io.Writer }

func (f failOnLearned) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"type":"`+batch.LearnedType+`"`)) {
		return 0, io.ErrClosedPipe
	}
	return f.w.Write(p)
}

// TestDistributeUnreportedValueNotSent: a child that cannot report a value
// it learned to the parent does not send the request that carries it.
func TestDistributeUnreportedValueNotSent(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sent.Add(1)
		}
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	wf := `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2],"distribute":{"batchSize":1,"invocations":2},"nodes":[
		{"id":"send","type":"http","with":{"url":"SRV/x","headers":{"Authorization":"Basic ${{ toBase64('user:' + secrets.k) }}"}}}]}}]}`
	parent, fo := fanEngines(nil)
	parent.Services.FanOut = fanOutFunc(func(ctx context.Context, payload []byte) (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(fo.child.ServeBatch(ctx, payload, failOnLearned{pw})) }()
		return pr, nil
	})
	s, _ := fanRun(t, nil, parent, secretBody(wf, srv.URL, "unreported-s3cret"))
	last := rtLastLine(streamText(s))
	t.Logf("%s", last)
	if n := sent.Load(); n > 0 {
		t.Errorf("%d requests sent with a value the parent was never told of", n)
	}
	if strings.Contains(last, `"status":"completed"`) {
		t.Errorf("completed: %s", last)
	}
}
