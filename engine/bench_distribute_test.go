package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkDistributedMap is issue 20's figure: 64 items, each an http
// call to a local server that answers after 0.5 s, at concurrency 4, run in
// process and fanned out to 8 child invocations (each child here is
// ServeBatch of another engine, fed through a pipe as a Lambda response
// stream would be). In process the map needs 64/4 × 0.5 s = 8 s; fanned
// out, 8 batches of 8 items at 4 at once, about 1 s. It takes seconds per
// run, so -short skips it.
func BenchmarkDistributedMap(b *testing.B) {
	if testing.Short() {
		b.Skip("each run waits on a slow server for seconds")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name string
		dist string
	}{
		{"in-process", ""},
		{"8-invocations", `"distribute":{"invocations":8},`},
	} {
		b.Run(tt.name, func(b *testing.B) {
			parent, _ := fanEngines(func(l *Limits) { l.MaxFanOutInvocations = 8 })
			body := []byte(fmt.Sprintf(`{"version":1,"runtime":{"http":{"policy":{"allowPrivateNetwork":true,"maxRequests":1000}}},
				"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..64 }}","concurrency":4,%s"nodes":[
				{"id":"get","type":"http","with":{"url":"%s/?i=${{ item }}"}}],"output":"${{ nodes.get.output.status }}"}}]}}`, tt.dist, srv.URL))
			for b.Loop() {
				x, err := parent.PrepareBody(body)
				if err != nil {
					b.Fatal(err)
				}
				s := &recSink{}
				if sum := x.Run(context.Background(), s); sum.Status != "completed" {
					b.Fatalf("status %s: %v", sum.Status, s.all()[len(s.all())-1])
				}
			}
		})
	}
}
