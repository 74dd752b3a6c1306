package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/telemetry"
)

// serveLambda serves h under the Lambda runtime. One Lambda handler takes
// every HTTP event and answers each in the form its invoker expects: a
// response stream for a function URL (NDJSON events leave as they happen),
// a buffered proxy response for API Gateway (REST and HTTP APIs, so `sam
// local start-api` works) and ALB. The aws-lambda-go runtime lets one
// handler do both: a returned io.Reader with the
// application/vnd.awslambda.http-integration-response content type is
// streamed, any other value is sent as JSON. Which form an event gets is
// decided by its shape and cfg.LambdaMode (see eventKindOf).
//
// In practice it does not return: the runtime loop ends the process itself
// (logged, exit status 1) when the runtime API fails, and Lambda starts a
// fresh one.
//
// A distributed map's batch (an event with engine/batch's EventField) is
// answered first, by eng, before any HTTP event kind is considered.
func serveLambda(ctx context.Context, h http.Handler, eng *engine.Engine, cfg config.Config, logger *slog.Logger, tr *telemetry.Tracing) error {
	inv := lambdaInvoker(h, eng, cfg, logger, tr)
	logger.Info("serving Lambda invocations", "mode", cfg.LambdaMode, "version", version)
	// No WithEnableSIGTERM: it registers an extension at every cold start
	// (time), and the runner keeps nothing that a shutdown would lose.
	lambda.StartWithOptions(inv.invoke, lambda.WithContext(ctx))
	return errors.New("the Lambda runtime loop ended")
}

// lambdaInvoker is serveLambda's handler of events. With tracing, its
// first invocation has main watch for SIGTERM, at which the last spans are
// flushed (main.go, watchSignals); never during INIT.
func lambdaInvoker(h http.Handler, eng *engine.Engine, cfg config.Config, logger *slog.Logger, tr *telemetry.Tracing) *invoker {
	var flush func(context.Context) error
	if tr != nil {
		flush = tr.Flush
	}
	inv := newInvoker(h, cfg.LambdaMode, logger, flush)
	inv.batches = eng
	if tr != nil {
		inv.firstInvoke = sync.OnceFunc(watchSignals)
	}
	return inv
}

// eventKind is how an invocation is answered.
type eventKind int

const (
	kindUnknown eventKind = iota
	kindStream            // payload v2, streamed (function URL, RESPONSE_STREAM)
	kindV2                // payload v2, buffered (HTTP API, BUFFERED function URL)
	kindV1                // payload v1, buffered (REST API, HTTP API v1 payloads)
	kindALB               // ALB target group, buffered
	kindBatch             // a distributed map's batch, streamed (engine.ServeBatch)
)

// present records that a member is there, without keeping its value:
// a batch is decoded again, whole, by engine.ServeBatch.
type present bool

func (p *present) UnmarshalJSON([]byte) error {
	*p = true
	return nil
}

// eventShape holds the fields the HTTP event formats differ by.
type eventShape struct {
	// Batch is batch.EventField: only an invocation of the function
	// itself (lambda:InvokeFunction, IAM) can send it; the HTTP events'
	// shapes are AWS's, with the request's body inside as a string.
	Batch          present `json:"runnerFanOutBatch"`
	Version        string  `json:"version"`
	HTTPMethod     string  `json:"httpMethod"`
	RequestContext struct {
		DomainName string          `json:"domainName"`
		ELB        json.RawMessage `json:"elb"`
		HTTP       struct {
			Method string `json:"method"`
		} `json:"http"`
	} `json:"requestContext"`
}

// eventKindOf tells the events apart. Function URL and HTTP API events
// share payload format 2.0, routeKey "$default" included; what tells them
// apart is the domain, <url-id>.lambda-url.<region>.on.aws for a function
// URL (`sam local start-api` sends none). Even so, a function URL's event
// does not say whether its invoke mode is RESPONSE_STREAM or BUFFERED:
// mode "stream" or "buffered" overrides the guess for payload-v2 events.
// Payload v1 and ALB events cannot be streamed, whatever the mode.
func eventKindOf(raw []byte, mode string) (eventKind, error) {
	var s eventShape
	if err := json.Unmarshal(raw, &s); err != nil {
		return kindUnknown, fmt.Errorf("event is not a JSON object: %w", err)
	}
	switch {
	case bool(s.Batch):
		return kindBatch, nil
	case len(s.RequestContext.ELB) > 0 && s.HTTPMethod != "":
		return kindALB, nil
	case s.HTTPMethod != "":
		return kindV1, nil
	case s.Version == "2.0" && s.RequestContext.HTTP.Method != "":
		switch mode {
		case config.LambdaModeStream:
			return kindStream, nil
		case config.LambdaModeBuffered:
			return kindV2, nil
		}
		if strings.Contains(s.RequestContext.DomainName, ".lambda-url.") {
			return kindStream, nil
		}
		return kindV2, nil
	}
	return kindUnknown, errors.New("not an HTTP event: want a function URL, API Gateway or ALB request")
}

// invoker is the Lambda handler.
type invoker struct {
	mode   string
	logger *slog.Logger
	stream func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)
	v2     *httpadapter.HandlerAdapterV2
	v1     *httpadapter.HandlerAdapter
	alb    *httpadapter.HandlerAdapterALB
	// batches runs distributed maps' batches; nil refuses them.
	batches *engine.Engine
	// firstInvoke, when not nil, runs at the start of every invocation
	// (a sync.OnceFunc: the work is done at the first).
	firstInvoke func()
}

// newInvoker returns the handler of Lambda events for h. flush, when not
// nil, runs after each request is served, before the invocation ends.
func newInvoker(h http.Handler, mode string, logger *slog.Logger, flush func(context.Context) error) *invoker {
	h = invocationHandler(h, logger, flush)
	return &invoker{
		mode:   mode,
		logger: logger,
		stream: lambdaurl.Wrap(h),
		v2:     httpadapter.NewV2(h),
		v1:     httpadapter.New(h),
		alb:    httpadapter.NewALB(h),
	}
}

// invoke answers one event. Every path hands the handler a request whose
// context is ctx: the invocation's, with its deadline (which the engine's
// execution deadline is derived from) and its Lambda request id. An error
// is a function error, which Lambda reports to the invoker as a 502.
func (inv *invoker) invoke(ctx context.Context, raw json.RawMessage) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			inv.logger.ErrorContext(ctx, "panic handling Lambda event", "panic", fmt.Sprint(p))
			resp, err = nil, errors.New("internal error")
		}
	}()
	if inv.firstInvoke != nil {
		inv.firstInvoke()
	}
	kind, err := eventKindOf(raw, inv.mode)
	if err != nil {
		inv.logger.WarnContext(ctx, "unsupported Lambda event", "err", err)
		return nil, err
	}
	switch kind {
	case kindBatch:
		return inv.batch(ctx, raw)
	case kindStream:
		var ev events.LambdaFunctionURLRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("function URL event: %w", err)
		}
		return inv.stream(ctx, &ev)
	case kindV2:
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("HTTP API event: %w", err)
		}
		return orError(inv.v2.ProxyWithContext(functions.BufferedResponse(ctx), ev))
	case kindV1:
		var ev events.APIGatewayProxyRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("REST API event: %w", err)
		}
		resp, err := inv.v1.ProxyWithContext(functions.BufferedResponse(ctx), ev)
		resp.Headers = singleValued(resp.MultiValueHeaders)
		return orError(resp, err)
	default:
		var ev events.ALBTargetGroupRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("ALB event: %w", err)
		}
		resp, err := inv.alb.ProxyWithContext(functions.BufferedResponse(ctx), ev)
		resp.Headers = singleValued(resp.MultiValueHeaders)
		return orError(resp, err)
	}
}

// batch runs a distributed map's batch and streams its lines as the
// invocation's response (InvokeWithResponseStream). The engine cancels the
// batch when a write fails: Lambda closed the stream because the parent
// went away.
func (inv *invoker) batch(ctx context.Context, raw []byte) (any, error) {
	if inv.batches == nil {
		return nil, errors.New("this runner does not run batches")
	}
	pr, pw := io.Pipe()
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				inv.logger.ErrorContext(ctx, "panic running a batch", "panic", fmt.Sprint(p))
				err = errors.New("internal error")
			}
			pw.CloseWithError(err)
		}()
		err = inv.batches.ServeBatch(ctx, raw, pw)
		if err != nil {
			inv.logger.WarnContext(ctx, "batch", "err", err)
		}
	}()
	return batchStream{pr}, nil
}

// batchStream is a batch's response: NDJSON, streamed by the runtime.
type batchStream struct{ *io.PipeReader }

func (batchStream) ContentType() string { return "application/x-ndjson" }

// orError drops the placeholder response the proxy pairs with an error, so
// that Lambda reports the error rather than a made-up 504.
func orError[T any](resp T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// singleValued joins multi-value headers. The proxy fills only
// multiValueHeaders, which an ALB target group without multi-value headers
// ignores; with both set, REST APIs merge them and ALB takes the one its
// setting names.
func singleValued(h map[string][]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = strings.Join(v, ",")
	}
	return out
}

// invocationHandler prepares every request for h: the Lambda request id
// replaces any client-sent X-Amzn-Request-Id (the handler logs it as
// requestId), the id is recorded as the invocation in flight for records
// logged without a context, and a panic becomes a 500 (functions.Recovered).
// The handler already recovers its own; this guard matters because the
// streaming adapter runs the handler on a goroutine of its own, where a
// panic would end the process and every invocation in it.
//
// flush (the spans' export) runs after h, still inside the invocation:
// Lambda freezes the process once the response is complete, and a frozen
// process exports nothing. A streamed response ends when this handler
// returns, so its end waits for the export, at most tracingFlushTimeout.
func invocationHandler(h http.Handler, logger *slog.Logger, flush func(context.Context) error) http.Handler {
	h = functions.Recovered(h, logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id string
		if lc, ok := lambdacontext.FromContext(r.Context()); ok {
			id = lc.AwsRequestID
			r.Header.Set("X-Amzn-Request-Id", id)
		}
		defer telemetry.BeginInvocation(id)()
		if flush != nil {
			defer flushSpans(r.Context(), flush, logger)
		}
		h.ServeHTTP(w, r)
	})
}

// tracingFlushTimeout bounds one export of spans: a collector that does
// not answer must not hold the invocation until its deadline.
const tracingFlushTimeout = 2 * time.Second

// flushSpans exports the invocation's spans, even when its client has gone
// (ctx cancelled), within tracingFlushTimeout and the invocation's deadline.
func flushSpans(ctx context.Context, flush func(context.Context) error, logger *slog.Logger) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		var cancelDl context.CancelFunc
		fctx, cancelDl = context.WithDeadline(fctx, dl)
		defer cancelDl()
	}
	if err := flush(fctx); err != nil {
		logger.WarnContext(ctx, "trace export", "err", err)
	}
}

// reportInitError posts a startup failure to the Lambda runtime API's
// init/error endpoint (the documented way for a custom runtime to fail its
// init with a message). Best effort: the process exits either way.
func reportInitError(ctx context.Context, api string, cause error) {
	body, _ := json.Marshal(map[string]any{"errorMessage": "runner: " + cause.Error(), "errorType": "Runtime.ConfigurationError"})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.ConfigurationError")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}
