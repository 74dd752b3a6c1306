package conformance_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/conformance"
)

// conformanceEndless is a runner whose stream never ends: one huge line,
// written as fast as the checker reads.
func conformanceEndless(t *testing.T) http.Handler {
	good := runner(t, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+token {
			good.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		chunk := []byte(strings.Repeat("x", 64<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
}

// A runner streaming without end is judged within the check timeout, with
// memory bounded by the kit's stream cap, and named as failing.
func TestHostileEndlessStream(t *testing.T) {
	// The most the heap held live at any collection while the suite ran:
	// what the kit keeps, without the garbage that HeapInuse also counts
	// (and that a loaded machine's later collections leave about longer).
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	srv := httptest.NewServer(conformanceEndless(t))
	t.Cleanup(srv.Close)
	rep := (&conformance.Checker{URL: srv.URL, Token: token, Timeout: 5 * time.Second}).Run(context.Background())
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the suite took %v against an endless stream", d)
	}
	close(stop)
	<-sampled
	if grown := int64(peak.Load()) - int64(before); grown > 256<<20 {
		t.Errorf("the live heap grew by %d MiB", grown>>20)
	}
	failed := map[string]bool{}
	for _, r := range rep.Results {
		failed[r.ID] = r.Status == conformance.Fail
	}
	for _, id := range []string{"stream.accepted-first", "stream.one-terminal", "stream.closed-after-terminal"} {
		if !failed[id] {
			t.Errorf("%s did not fail against an endless stream", id)
		}
	}
	// The runner's own refusals still pass: the kit judged each rule alone.
	if failed["auth.missing-token"] || failed["capabilities.shape"] {
		t.Errorf("unrelated checks failed: %+v", rep.Results)
	}
}
