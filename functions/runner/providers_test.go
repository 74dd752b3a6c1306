package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/infra/tokens"
	"github.com/runnerd/lambda-runner/protocol"
)

// A build holds the providers its tags leave in (docs/deploy.md). make
// test runs this test in the full build and again in one without openai
// and anthropic: capabilities advertise exactly the providers compiled in,
// and a request naming one that is not gets a 400 at its path.
func TestProvidersCompiledIn(t *testing.T) {
	h, err := newHandler(context.Background(), wireConfig(t, nil), tokens.Static{Set: tokens.NewSet("t")}, slog.New(slog.DiscardHandler), io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	compiled := models.Providers()
	if got := h.Capabilities.Runtime.Models.Providers; !slices.Equal(got, compiled) || len(got) == 0 {
		t.Errorf("capabilities providers = %q, want the compiled-in %q", got, compiled)
	}
	t.Logf("compiled in: %q", compiled)
	for _, name := range []string{models.ProviderAnthropic, models.ProviderBedrock, models.ProviderOpenAI} {
		if slices.Contains(compiled, name) {
			continue // the model node tests use them
		}
		body := `{"version":1,"workflow":{"nodes":[{"id":"m","type":"model","with":{"role":"r","prompt":"hi"}}]},` +
			`"runtime":{"models":[{"role":"r","provider":"` + name + `","model":"m"}]}}`
		r := httptest.NewRequest(http.MethodPost, protocol.PathExecutions, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer t")
		r.Header.Set("Content-Type", protocol.ContentTypeJSON)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var e protocol.ErrorResponse
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != http.StatusBadRequest {
			t.Fatalf("%s not compiled in: status %d, body %s", name, w.Code, w.Body)
		}
		want := protocol.Detail{Path: "runtime.models[0].provider"}
		found := false
		for _, d := range e.Error.Details {
			found = found || d.Path == want.Path && strings.Contains(d.Message, `provider "`+name+`" is not compiled into this runner`)
		}
		if !found {
			t.Errorf("%s not compiled in: details %+v, want one at %s saying so", name, e.Error.Details, want.Path)
		}
	}
}
