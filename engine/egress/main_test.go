package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/protocol"
)

// Every test talks to loopback only: servers listen on 127.0.0.1 (or
// 127.0.0.2), and requests to any other address are either decided before
// dialling or stopped by Authorize.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer is an httptest server that counts the requests it receives.
type testServer struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	s, err := listenServer(t, "127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func listenServer(t *testing.T, addr string, h http.HandlerFunc) (*testServer, error) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &testServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s, nil
}

// port is the server's port, for building URLs with other host names.
func (s *testServer) port() string {
	return s.Listener.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]
}

func (s *testServer) addrPort() netip.AddrPort { return s.Listener.Addr().(*net.TCPAddr).AddrPort() }

func ok(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }

var (
	allow127 = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	// loopbackOpts admit the 127.0.0.1 test servers and nothing else.
	loopbackOpts = Options{AllowPrefixes: allow127}
)

func newClient(t *testing.T, p protocol.HTTPPolicy, o Options) *Client {
	t.Helper()
	c, err := New(p, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// wantError checks that err is an *Error with code and a message holding
// every fragment.
func wantError(t *testing.T, err error, code protocol.Code, fragments ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error %s", err, err, code)
	}
	if e.Code != code {
		t.Errorf("code = %s (%q), want %s", e.Code, e.Message, code)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not contain %q", e.Message, f)
		}
	}
}

func intPtr(n int) *int { return &n }

// protocol0 is the zero policy: the runner's defaults.
func protocol0() protocol.HTTPPolicy { return protocol.HTTPPolicy{} }

// failAuthorize fails the test if a request gets as far as the permission
// gate.
func failAuthorize(t *testing.T) func(context.Context, string) error {
	return func(_ context.Context, host string) error {
		t.Errorf("Authorize(%q) called for a request that must be refused first", host)
		return errStop
	}
}
