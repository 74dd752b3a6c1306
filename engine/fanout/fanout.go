// Package fanout starts the child invocations of a distributed map: Lambda's
// InvokeWithResponseStream, through aws-sdk-go-v2's lambda client, on the
// runner's own function and version (or the function RUNNER_FANOUT_FUNCTION
// names). The engine reaches it as engine.FanOut (distribute.FanOut, which
// engine/distribute sends the batches through); the child's side is
// engine.Engine.ServeBatch.
package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Defaults of Options.
const (
	// DefaultFirstBackoff is the first wait after a throttled invocation;
	// each later one doubles, up to DefaultMaxBackoff, each jittered.
	DefaultFirstBackoff = 100 * time.Millisecond
	DefaultMaxBackoff   = 5 * time.Second
)

// Options configure a Client. Function is required; the rest have
// defaults.
type Options struct {
	// Function is the function's name or ARN.
	Function string
	// Qualifier is the version or alias invoked ("" for $LATEST or the
	// one an ARN names).
	Qualifier string
	// LoadAWSConfig loads the AWS configuration (region, credentials,
	// AWS_ENDPOINT_URL_LAMBDA), on the first invocation.
	LoadAWSConfig func(ctx context.Context) (aws.Config, error)
	// HTTPClient sends the requests (nil: the SDK's).
	HTTPClient *http.Client
	// FirstBackoff and MaxBackoff shape the retries of a throttled
	// invocation (0: the defaults).
	FirstBackoff, MaxBackoff time.Duration
}

// Client invokes child invocations. The lambda client is built on the first
// Invoke, not at start: a cold start of a runner that never fans out pays
// nothing for it. It is safe for concurrent use.
type Client struct {
	opts Options

	once sync.Once
	cfg  aws.Config
	err  error
}

// New returns a Client for o.
func New(o Options) *Client {
	if o.FirstBackoff <= 0 {
		o.FirstBackoff = DefaultFirstBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	return &Client{opts: o}
}

// ErrThrottled is wrapped by the error of an invocation still throttled
// when its context ended.
var ErrThrottled = errors.New("invocation throttled (429)")

// lambda returns a lambda client of its own for one invocation. The AWS
// configuration is loaded once and kept, but the client is not shared:
// the SDK's client keeps one event-stream codec, whose payload buffer
// every InvokeWithResponseStream of that client decodes into, so two
// streams read at once through one client overwrite each other's frames
// (the race detector reports it in smithy-go's Codec.DeserializeEventMessage).
// A client is cheap to build beside an invocation.
func (c *Client) lambda(ctx context.Context) (*lambda.Client, error) {
	c.once.Do(func() {
		if c.opts.Function == "" {
			c.err = errors.New("fan-out: no function to invoke (RUNNER_FANOUT_FUNCTION, or AWS_LAMBDA_FUNCTION_NAME under Lambda)")
			return
		}
		if c.opts.LoadAWSConfig == nil {
			c.err = errors.New("fan-out: no AWS configuration loader")
			return
		}
		// Without the request's cancellation: what is loaded is kept.
		cfg, err := c.opts.LoadAWSConfig(context.WithoutCancel(ctx))
		if err != nil {
			c.err = fmt.Errorf("fan-out: AWS configuration: %w", err)
			return
		}
		c.cfg = cfg
	})
	if c.err != nil {
		return nil, c.err
	}
	return lambda.NewFromConfig(c.cfg, func(o *lambda.Options) {
		if c.opts.HTTPClient != nil {
			o.HTTPClient = c.opts.HTTPClient
		}
		// Throttles are retried here, until the deadline; any other
		// failure may have started the function, and is not.
		o.RetryMaxAttempts = 1
	}), nil
}

// Invoke starts one invocation with payload as its event and returns the
// function's response stream. A throttled invocation (429: it never
// started) is retried with jittered, growing backoff until ctx ends. The
// stream fails, rather than ending, when the function fails (a function
// error reported in the stream's completion) or the stream breaks.
func (c *Client) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	client, err := c.lambda(ctx)
	if err != nil {
		return nil, err
	}
	in := &lambda.InvokeWithResponseStreamInput{
		FunctionName:   aws.String(c.opts.Function),
		Payload:        payload,
		InvocationType: types.ResponseStreamingInvocationTypeRequestResponse,
	}
	if c.opts.Qualifier != "" {
		in.Qualifier = aws.String(c.opts.Qualifier)
	}
	backoff := c.opts.FirstBackoff
	for {
		out, err := client.InvokeWithResponseStream(ctx, in)
		if err == nil {
			return newStream(out.GetStream()), nil
		}
		var tr *types.TooManyRequestsException
		if !errors.As(err, &tr) {
			return nil, err
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w until %v", ErrThrottled, context.Cause(ctx))
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}

// stream reads the payload chunks of one response stream.
type stream struct {
	es   *lambda.InvokeWithResponseStreamEventStream
	buf  []byte
	err  error
	done bool
}

func newStream(es *lambda.InvokeWithResponseStreamEventStream) *stream { return &stream{es: es} }

func (s *stream) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		ev, ok := <-s.es.Events()
		if !ok {
			if err := s.es.Err(); err != nil {
				s.err = fmt.Errorf("response stream: %w", err)
			} else if !s.done {
				s.err = io.ErrUnexpectedEOF
			} else {
				s.err = io.EOF
			}
			continue
		}
		switch e := ev.(type) {
		case *types.InvokeWithResponseStreamResponseEventMemberPayloadChunk:
			s.buf = e.Value.Payload
		case *types.InvokeWithResponseStreamResponseEventMemberInvokeComplete:
			if code := aws.ToString(e.Value.ErrorCode); code != "" {
				s.err = fmt.Errorf("function error %s: %s", code, truncate(aws.ToString(e.Value.ErrorDetails), 512))
				continue
			}
			s.done = true
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// Close ends the stream (and the HTTP response under it).
func (s *stream) Close() error { return s.es.Close() }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
