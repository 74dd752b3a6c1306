//go:build !notracing

package telemetry

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/runnerd/lambda-runner/protocol"
)

// otlpCollector is an OTLP/HTTP traces endpoint that decodes each export
// as a collector would, with the official collector message, and answers
// with the statuses in fail before accepting.
type otlpCollector struct {
	*httptest.Server
	mu       sync.Mutex
	fail     []int // statuses answered to the first requests, in order
	requests int
	spans    []string // span names received
	headers  []http.Header
	bad      []string // what was wrong with a request
}

func otlpNewCollector(t *testing.T, tlsServer bool, fail ...int) *otlpCollector {
	t.Helper()
	c := &otlpCollector{fail: fail}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		c.headers = append(c.headers, r.Header.Clone())
		if len(c.fail) > 0 {
			status := c.fail[0]
			c.fail = c.fail[1:]
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(status)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				c.bad = append(c.bad, "gzip: "+err.Error())
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			c.bad = append(c.bad, r.Method+" "+r.Header.Get("Content-Type")+" "+r.URL.Path)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if r.URL.Path != "/custom/v1/traces" {
			c.bad = append(c.bad, "path "+r.URL.Path)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, s.Name)
				}
			}
		}
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	if tlsServer {
		c.Server = httptest.NewTLSServer(h)
	} else {
		c.Server = httptest.NewServer(h)
	}
	t.Cleanup(c.Close)
	return c
}

// otlpTrace records an execution with one attempt and flushes it.
func otlpTrace(t *testing.T, o TracingOptions) error {
	t.Helper()
	o.ServiceName = "s"
	tr, err := NewTracing(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	ctx, endExec := tr.Observer().StartExecution(context.Background(), "exec-1")
	_, endAttempt := tr.Observer().StartAttempt(ctx, "n", "set", 1)
	endAttempt("completed", "")
	endExec(protocol.Summary{Status: protocol.StatusCompleted})
	return tr.Flush(context.Background())
}

// The OTLP/HTTP exporter: spans reach the collector as a protobuf
// ExportTraceServiceRequest with the configured headers, compressed when
// asked, retried on the statuses the specification calls transient and
// not on others, always within the export timeout.
func TestTracingExportsOverHTTP(t *testing.T) {
	const secret = "s3cret-t0ken"
	tests := []struct {
		name      string
		gzip      bool
		fail      []int
		timeout   time.Duration
		requests  int
		wantErr   string // "" for a delivered export
		maxFlush  time.Duration
		tlsServer bool
	}{
		{name: "plain", requests: 1},
		{name: "gzip", gzip: true, requests: 1},
		{name: "tls with the certificate trusted", tlsServer: true, requests: 1},
		{name: "retried 503 then 502 and 504", fail: []int{503, 502, 504}, requests: 4},
		{name: "429 waits for Retry-After", fail: []int{429}, requests: 2},
		{name: "400 is not retried", fail: []int{400}, requests: 1, wantErr: "400"},
		{name: "retries end with the timeout", fail: []int{503, 503, 503, 503, 503, 503, 503, 503, 503, 503},
			timeout: 500 * time.Millisecond, wantErr: "503", maxFlush: 2 * time.Second},
		{name: "429 longer than the timeout is not waited for", fail: []int{429}, timeout: 300 * time.Millisecond,
			requests: 1, wantErr: "429", maxFlush: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := otlpNewCollector(t, tt.tlsServer, tt.fail...)
			o := TracingOptions{URL: c.URL + "/custom/v1/traces", Gzip: tt.gzip, Timeout: tt.timeout,
				Headers: map[string]string{"Authorization": "Bearer " + secret, "X-Tenant": "t1"}}
			if tt.tlsServer {
				o.CertificateFile = filepath.Join(t.TempDir(), "ca.pem")
				pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate().Raw})
				if err := os.WriteFile(o.CertificateFile, pemBytes, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			err := otlpTrace(t, o)
			took := time.Since(start)
			c.mu.Lock()
			defer c.mu.Unlock()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Flush: %v", err)
				}
				if len(c.spans) != 2 || len(c.bad) != 0 {
					t.Errorf("collector got spans %q, problems %q; want the attempt and the execution", c.spans, c.bad)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Flush = %v, want an error naming %s", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a header value: %v", err)
				}
			}
			if tt.requests > 0 && c.requests != tt.requests {
				t.Errorf("collector saw %d requests, want %d", c.requests, tt.requests)
			}
			if tt.maxFlush > 0 && took > tt.maxFlush {
				t.Errorf("Flush took %s, want the timeout to bound it (%s)", took, tt.maxFlush)
			}
			for _, h := range c.headers {
				if h.Get("Authorization") != "Bearer "+secret || h.Get("X-Tenant") != "t1" {
					t.Errorf("export headers %v, want the configured ones", h)
				}
				if got := h.Get("Content-Encoding"); (got == "gzip") != tt.gzip {
					t.Errorf("Content-Encoding %q with gzip %v", got, tt.gzip)
				}
			}
		})
	}
}

// A collector that is not there fails the flush at once rather than
// holding each Lambda invocation for the whole timeout.
func TestTracingExportWithoutCollector(t *testing.T) {
	c := otlpNewCollector(t, false)
	url := c.URL
	c.Close()
	start := time.Now()
	err := otlpTrace(t, TracingOptions{URL: url + "/v1/traces", Timeout: 5 * time.Second})
	if err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("Flush = %v after %s, want a prompt error", err, time.Since(start))
	}
}

func TestTracingExportBadCertificate(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []TracingOptions{
		{CertificateFile: filepath.Join(dir, "missing.pem")},
		{CertificateFile: notPEM},
		{ClientCertificateFile: notPEM, ClientKeyFile: notPEM},
	} {
		if _, err := NewTracing(context.Background(), o); err == nil {
			t.Errorf("NewTracing(%+v) accepted it", o)
		}
	}
}

// A default build asked for gRPC refuses at start, naming the variable and
// the build option.
func TestTracingGRPCNeedsItsBuild(t *testing.T) {
	tr, err := NewTracing(context.Background(), TracingOptions{Protocol: ProtocolGRPC})
	if err == nil {
		defer tr.Shutdown(context.Background())
	}
	if (err == nil) != grpcCompiledIn {
		t.Fatalf("NewTracing(grpc) = %v in a build with gRPC %v", err, grpcCompiledIn)
	}
	if err != nil && (!strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") || !strings.Contains(err.Error(), "TRACING=grpc")) {
		t.Errorf("error %q does not name the variable and the build option", err)
	}
}
