//go:build !noopenai && !noanthropic && !nobedrock

package models

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// A failed call names where it went — scheme, host and path, the entry's
// secrets redacted — so that a base URL without its /v1 shows at once
// which URL answered 404. Each provider's real SDK client against a local
// server speaking its wire format.
func TestErrorsNameTheURL(t *testing.T) {
	tests := []struct {
		name string
		// path is put after the server's URL in the entry's base URL.
		path       string
		reply      func(w wire) reply
		closed     bool
		wantStatus int
		wantPath   map[string]string // by provider: the URL's path
	}{
		{"404 without a body", "/tenant", func(wire) reply { return reply{status: 404} }, false, 404,
			map[string]string{ProviderOpenAI: "/tenant/chat/completions", ProviderAnthropic: "/tenant/v1/messages", ProviderBedrock: "/tenant/model/test-model/converse"}},
		{"the provider's error", "", func(w wire) reply { return w.errorReply(400, "bad model") }, false, 400,
			map[string]string{ProviderOpenAI: "/chat/completions", ProviderAnthropic: "/v1/messages", ProviderBedrock: "/model/test-model/converse"}},
		{"the API key in the path", "/keys/" + testAPIKey, func(wire) reply { return reply{status: 404} }, false, 404,
			// What follows a secret up to the end of its run of base64
			// characters goes with it (protocol/redact: no residue tells
			// its length), here the rest of the path.
			map[string]string{ProviderOpenAI: "/keys/" + redact.Marker, ProviderAnthropic: "/keys/" + redact.Marker,
				ProviderBedrock: "/keys/" + redact.Marker}},
		{"a header value in the path", "/h/" + testHeaderValue, func(wire) reply { return reply{status: 404} }, false, 404,
			map[string]string{ProviderOpenAI: "/h/" + redact.Marker, ProviderAnthropic: "/h/" + redact.Marker,
				ProviderBedrock: "/h/" + redact.Marker}},
		{"transport failure", "/gone", func(w wire) reply { return reply{body: w.ok} }, true, 0,
			map[string]string{ProviderOpenAI: "/gone/chat/completions", ProviderAnthropic: "/gone/v1/messages", ProviderBedrock: "/gone/model/test-model/converse"}},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(w.provider+"/"+tt.name, func(t *testing.T) {
				awsTestEnv(t)
				srv := newFakeServer(t, w.provider == ProviderBedrock, tt.reply(w))
				clients := &Clients{HTTPClient: srv.client(t), MaxRetries: -1}
				m := protocol.Model{Provider: w.provider, Model: "test-model", BaseURL: srv.URL + tt.path,
					APIKey: testAPIKey, Headers: map[string]string{"X-Secret": testHeaderValue}}
				p, err := clients.Provider(context.Background(), m)
				if err != nil {
					t.Fatal(err)
				}
				if tt.closed {
					srv.Close()
				}
				_, err = p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
				var me *Error
				if !errors.As(err, &me) {
					t.Fatalf("error %v (%T), want *Error", err, err)
				}
				if me.Status != tt.wantStatus {
					t.Errorf("status %d, want %d (%v)", me.Status, tt.wantStatus, me)
				}
				base, _ := url.Parse(srv.URL)
				want := base.Scheme + "://" + base.Host + tt.wantPath[w.provider]
				if me.URL != want {
					t.Errorf("URL %q, want %q", me.URL, want)
				}
				for _, text := range []string{me.URL, me.Message, me.Error()} {
					if strings.Contains(text, testAPIKey) || strings.Contains(text, testHeaderValue) {
						t.Errorf("a secret in %q", text)
					}
				}
				if tt.closed && w.provider != ProviderBedrock && strings.Contains(me.Message, srv.URL) {
					t.Errorf("the transport failure's message repeats the URL: %q", me.Message)
				}
			})
		}
	}
}

func TestErrorURLLeavesOutUserinfoAndQuery(t *testing.T) {
	s := newScrubber(protocol.Model{APIKey: "k-123"})
	tests := []struct{ in, want string }{
		{"https://user:pw@host.example/v1/chat/completions?api-version=2024&key=k-123#frag", "https://host.example/v1/chat/completions"},
		{"http://127.0.0.1:8080/a%2Fb/k-123/x", "http://127.0.0.1:8080/a%2Fb/" + redact.Marker},
		{"http://127.0.0.1:8080/a/k-123?x=1", "http://127.0.0.1:8080/a/" + redact.Marker},
		{"https://host.example", "https://host.example"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.at(&Error{}, u).URL; got != tt.want {
			t.Errorf("at(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := s.at(&Error{}, nil).URL; got != "" {
		t.Errorf("no URL: %q", got)
	}
}
