package functions_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// acceptWriter is a ResponseWriter that notes when the first line (the
// accepted event) is flushed and then behaves as a client that went away:
// it cancels the request and refuses further writes, so that the execution
// stops right after acceptance and the benchmark measures the way to it.
type acceptWriter struct {
	header   http.Header
	status   int
	buf      bytes.Buffer
	accepted time.Time
	cancel   context.CancelFunc
}

var errGone = errors.New("benchmark client gone after accepted")

func (w *acceptWriter) Header() http.Header { return w.header }

func (w *acceptWriter) WriteHeader(status int) { w.status = status }

func (w *acceptWriter) Write(p []byte) (int, error) {
	if !w.accepted.IsZero() {
		return 0, errGone
	}
	return w.buf.Write(p)
}

// FlushError is what http.ResponseController calls to flush.
func (w *acceptWriter) FlushError() error {
	if w.accepted.IsZero() {
		w.accepted = time.Now()
		w.cancel()
	}
	return nil
}

// BenchmarkAccepted measures, in process, the time from a request reaching
// the handler to its accepted event being flushed: authentication, reading
// and decoding the body, validating and compiling the workflow, and writing
// the first line. Target: under 200 µs (ns/accepted).
func BenchmarkAccepted(b *testing.B) {
	hello, err := os.ReadFile("../examples/hello.json")
	if err != nil {
		b.Fatal(err)
	}
	// hello-cold makes every expression and the input schema new text on
	// each request, as for a workflow the runner has not seen before:
	// Prepare's compile caches (engine/lang/cache.go, engine/schemacache.go) miss.
	cold := func(i int) []byte {
		b := bytes.ReplaceAll(hello, []byte(" }}"), fmt.Appendf(nil, " /* %d */ }}", i))
		return bytes.Replace(b, []byte(`"input": {"type"`), fmt.Appendf(nil, `"input": {"$comment": "%d", "type"`, i), 1)
	}
	for _, bc := range []struct {
		name string
		body func(i int) []byte
	}{
		{"trivial", func(int) []byte { return []byte(minimalBody) }},
		{"hello", func(int) []byte { return hello }},
		{"hello-cold", cold},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHandler(b, nil)
			u, _ := url.Parse("http://runner" + protocol.PathExecutions)
			hdr := http.Header{"Authorization": {"Bearer " + goodToken}, "Content-Type": {protocol.ContentTypeJSON}}
			var toAccepted time.Duration
			b.ReportAllocs()
			for i := range b.N {
				body := bc.body(i)
				ctx, cancel := context.WithCancel(context.Background())
				r := (&http.Request{
					Method: http.MethodPost, URL: u, Header: hdr, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
					Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
				}).WithContext(ctx)
				w := &acceptWriter{header: http.Header{}, cancel: cancel}
				start := time.Now()
				h.ServeHTTP(w, r)
				cancel()
				if w.accepted.IsZero() {
					b.Fatalf("not accepted: status %d, body %s", w.status, w.buf.Bytes())
				}
				toAccepted += w.accepted.Sub(start)
			}
			b.ReportMetric(float64(toAccepted.Nanoseconds())/float64(b.N), "ns/accepted")
		})
	}
}
