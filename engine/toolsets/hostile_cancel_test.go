package toolsets

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/protocol"
)

// A disconnect (the caller's context cancelled) ends every in-flight tool
// call promptly, on the client and on the server: 16 concurrent calls to a
// tool that blocks until its context is done all return, and every tool
// handler has returned, well before the tool's timeout. The client is the
// guarded endpoint client main uses. With "close at once" the Set is closed
// as soon as the calls return, as an execution does when its client leaves:
// the server must still hear of every call (the SDK's server only ends a
// tool on notifications/cancelled, never on the request's end or the
// session's DELETE).
func TestHostileCancelInFlightCalls(t *testing.T) {
	for _, tt := range []struct {
		name        string
		closeAtOnce bool
	}{
		{name: "disconnect"},
		{name: "close at once", closeAtOnce: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cancelInFlight(t, tt.closeAtOnce)
		})
	}
}

func cancelInFlight(t *testing.T, closeAtOnce bool) {
	const calls = 16
	var running, started atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "blocker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Blocks until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			running.Add(1)
			started.Add(1)
			defer running.Add(-1)
			select {
			case <-ctx.Done():
			case <-time.After(15 * time.Second): // past every bound below
			}
			return &mcp.CallToolResult{}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	endpoints := egress.NewEndpoints(egress.Options{}, nil)
	set := New([]protocol.Toolset{{Name: "b", URL: hs.URL, TimeoutMs: 10_000}},
		Options{HTTPClient: endpoints.Client(), CheckEndpoint: endpoints.Check})
	defer set.Close()
	defer endpoints.Client().CloseIdleConnections()

	ctx, disconnect := context.WithCancel(context.Background())
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := set.Call(ctx, "b", "wait", nil)
			errs <- err
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); started.Load() < calls; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d calls reached the tool", started.Load(), calls)
		}
	}
	disconnect()
	cancelled := time.Now()
	wg.Wait()
	if closeAtOnce {
		if err := set.Close(); err != nil {
			t.Logf("close: %v", err)
		}
	}
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Errorf("calls returned %v after the disconnect", d)
	}
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("call error = %v, want context.Canceled", err)
		}
	}
	// The server was told: every tool handler has returned.
	for deadline := time.Now().Add(2 * time.Second); running.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d tool handlers still running 2s after the disconnect", running.Load())
		}
	}
}
