package services

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/limits"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// Run is the services of one running execution. The toolsets are
// connected lazily, on their first use; everything is released by Close
// when the execution ends.
type Run struct {
	Models  *models.Table
	Clients *models.Clients
	Tools   *toolsets.Set // nil when the request defines no toolset
	HTTP    *egress.Client
	// Reads are the caps on what the execution reads from outside, and
	// InFlight bounds the replies being read at once.
	Reads    limits.ReadCaps
	InFlight *egress.ReadLimit
}

// Open builds the services of one run: the model table and egress client
// Check made for its request (Request.Models, Request.HTTP), the model
// clients, and the toolsets defs defines, read under reads.
func (c *Config) Open(table *models.Table, http *egress.Client, clients *models.Clients, defs []protocol.Toolset, reads limits.ReadCaps) *Run {
	s := &Run{Models: table, Clients: clients, HTTP: http, Reads: reads}
	s.InFlight = egress.NewInFlightLimit(reads.InFlight)
	if len(defs) > 0 {
		opts := c.Toolsets
		opts.MaxResponseBytes, opts.MaxListBytes, opts.MaxListPages = reads.Reply, reads.ToolList, reads.ToolListPages
		opts.InFlight = s.InFlight
		s.Tools = toolsets.New(defs, opts)
	}
	if s.HTTP == nil {
		// Prepare refuses a request whose policy egress.New rejects, so
		// this is an execution built some other way: give it a client
		// with the operator's limits and the default policy.
		s.HTTP, _ = egress.New(protocol.HTTPPolicy{}, c.HTTP)
	}
	return s
}

// Close releases the services once the terminal event is written. The
// toolsets' goodbyes (a DELETE per session, which a server may never
// answer) run after the run has returned, counted in closing, so that
// they never hold the response, and within reserve and ctx's deadline, so
// that they never outlive the invocation. Failures only matter to
// operators: they are logged to log under the execution's id, redacted.
// ctx is the caller's.
func (s *Run) Close(ctx context.Context, reserve time.Duration, closing *sync.WaitGroup, log *slog.Logger, executionID string, redact *secrets.Scrubber) {
	if s == nil {
		return
	}
	if s.HTTP != nil {
		s.HTTP.Close()
	}
	if s.Tools == nil {
		return
	}
	by := time.Now().Add(reserve)
	if d, ok := ctx.Deadline(); ok && d.Before(by) {
		by = d
	}
	if closing == nil {
		closing = &sync.WaitGroup{} // an Engine not made by New
	}
	closing.Go(func() {
		cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), by)
		defer cancel()
		if err := s.Tools.CloseBy(cctx); err != nil {
			log.LogAttrs(cctx, slog.LevelWarn, "closing toolsets",
				slog.String("executionId", executionID),
				slog.String("error", redact.String(err.Error())))
		}
	})
}

// ReplyLimit is the read limit of one model reply.
func (s *Run) ReplyLimit() *egress.ReadLimit {
	return egress.NewReadLimit(s.Reads.Reply, "model reply", s.InFlight)
}

// HTTPRequests is usage.httpRequests: the hops the egress client let
// through, redirects included.
func (s *Run) HTTPRequests() int64 {
	if s == nil || s.HTTP == nil {
		return 0
	}
	return int64(s.HTTP.Requests())
}
