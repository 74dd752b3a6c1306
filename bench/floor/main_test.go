package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandler: a recorded stream comes back byte for byte, whatever the
// body; a shape with no recording, or one naming another directory, is a
// 404.
func TestHandler(t *testing.T) {
	dir := t.TempDir()
	stream := "{\"type\":\"accepted\"}\n{\"type\":\"node.started\"}\n{\"type\":\"result\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "chain3.ndjson"), []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := handler(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tt := range []struct {
		shape  string
		status int
		body   string
	}{
		{"chain3", http.StatusOK, stream},
		{"chain4", http.StatusNotFound, ""},
		{"", http.StatusNotFound, ""},
		{"../chain3", http.StatusNotFound, ""},
	} {
		t.Run(tt.shape, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/v1/executions?shape="+tt.shape, "application/json", strings.NewReader(`{"version":1}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || (tt.status == http.StatusOK && string(got) != tt.body) {
				t.Fatalf("status %d, body %q; want %d, %q", resp.StatusCode, got, tt.status, tt.body)
			}
		})
	}
}
