//go:build !notracing

package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// otlpHTTPClient sends spans to an OTLP/HTTP collector as binary protobuf
// (the specification's http/protobuf): otlpExporter encodes the requests,
// this client only compresses, sends and retries them.
//
// It stands in for otlptracehttp because that package, through the OTLP
// collector package it encodes requests with, links the whole of gRPC
// (about 3 MB) into a binary that never speaks gRPC.
type otlpHTTPClient struct {
	url     string
	headers map[string]string
	timeout time.Duration
	gzip    bool
	client  *http.Client
}

// Retries (429, 502, 503, 504, as the specification lists) wait
// otlpFirstBackoff, doubling up to otlpMaxBackoff, or what Retry-After
// says, and stop when the export's timeout would pass.
const (
	otlpFirstBackoff = 100 * time.Millisecond
	otlpMaxBackoff   = 5 * time.Second
	// otlpMaxResponse bounds how much of a response is read (and
	// drained so the connection is reused).
	otlpMaxResponse = 64 << 10
)

func newOTLPHTTPClient(o TracingOptions) (*otlpHTTPClient, error) {
	c := &otlpHTTPClient{url: o.URL, headers: o.Headers, timeout: o.Timeout, gzip: o.Gzip}
	if c.url == "" {
		c.url = DefaultOTLPURL
	}
	if c.timeout <= 0 {
		c.timeout = DefaultOTLPTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.CertificateFile != "" || o.ClientCertificateFile != "" {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.CertificateFile != "" {
		pem, err := os.ReadFile(o.CertificateFile)
		if err != nil {
			return nil, fmt.Errorf("OTLP certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTLP certificate: %s holds no PEM certificate", o.CertificateFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	if o.ClientCertificateFile != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCertificateFile, o.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("OTLP client certificate: %w", err)
		}
		tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	}
	c.client = &http.Client{Transport: tr}
	return c, nil
}

// Stop closes idle connections; an export in flight ends with its own
// timeout.
func (c *otlpHTTPClient) Stop(context.Context) error {
	c.client.CloseIdleConnections()
	return nil
}

// upload sends body, an encoded ExportTraceServiceRequest.
func (c *otlpHTTPClient) upload(ctx context.Context, body []byte) error {
	if c.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	backoff := otlpFirstBackoff
	for {
		wait, err := c.post(ctx, body)
		if err == nil || wait < 0 {
			return err
		}
		if wait == 0 {
			wait, backoff = backoff, min(2*backoff, otlpMaxBackoff)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return fmt.Errorf("%w; no time left to retry within the export timeout (%s)", err, c.timeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w; %w", err, ctx.Err())
		case <-t.C:
		}
	}
}

// post sends body once. wait is how long to wait before retrying: -1 for
// an error not worth retrying, 0 for the backoff's choice, else the
// server's Retry-After. Errors name the status, never a header.
func (c *otlpHTTPClient) post(ctx context.Context, body []byte) (wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("OTLP export: %w", err)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		// Not retried, as otlptracehttp did not: with no collector
		// listening, every Lambda invocation would wait out the timeout.
		return -1, fmt.Errorf("OTLP export: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, otlpMaxResponse))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		err := fmt.Errorf("OTLP export: collector answered %s", resp.Status)
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	default:
		return -1, errors.New("OTLP export: collector answered " + resp.Status)
	}
}
