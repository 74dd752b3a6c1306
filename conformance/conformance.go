// Package conformance checks that a runner speaks Runner protocol v1: the
// rules of the protocol's text and docs/protocol.md that a client can
// observe from outside, run against any runner URL with a token.
//
// Checks that a runner's capabilities make inapplicable are reported as
// skipped, not passed. Every request it sends is side-effect free beyond the
// runner itself: executions use only set and fail nodes, and the tool and
// model nodes of the consent and role checks are suspended or denied before
// they could call anything (their endpoints are under .invalid, which never
// resolves).
package conformance

import (
	"context"
	"net/http"
	"time"
)

// Status is a check's verdict.
type Status string

// Verdicts.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's verdict.
type Result struct {
	// ID names the check, e.g. "auth.missing-token".
	ID string `json:"id"`
	// Rule is the protocol rule it holds the runner to.
	Rule   string `json:"rule"`
	Status Status `json:"status"`
	// Reason says why a check failed or was skipped.
	Reason string `json:"reason,omitempty"`
}

// Report is the outcome of a whole run.
type Report struct {
	URL     string   `json:"url"`
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped"`
	// Stopped says why no check ran: what answers at URL is not a runner
	// (GET /v1/capabilities is not a capabilities document), or nothing
	// answers there.
	Stopped string `json:"stopped,omitempty"`
}

// OK reports whether the suite ran and no check failed.
func (r Report) OK() bool { return r.Failed == 0 && r.Stopped == "" }

// Checker runs the suite against one runner.
type Checker struct {
	// URL is the runner's base URL.
	URL string
	// Token is a valid bearer token; never reported.
	Token string
	// HTTP is the client; one without proxies and with sane timeouts if nil.
	HTTP *http.Client
	// Timeout bounds each request, stream included. Default 30s.
	Timeout time.Duration
}

// check is one rule of the suite.
type check struct {
	id, rule string
	run      func(ctx context.Context, s *session) (Status, string)
}

// Run runs every check in order and reports them all; it runs none, and
// says why in Report.Stopped, when no runner answers at c.URL.
func (c *Checker) Run(ctx context.Context) Report {
	s := c.session()
	rep := Report{URL: c.URL}
	pctx, cancel := context.WithTimeout(ctx, s.timeout)
	rep.Stopped = s.notRunner(pctx)
	cancel()
	if rep.Stopped != "" {
		return rep
	}
	for _, ch := range suite {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		st, reason := ch.run(cctx, s)
		cancel()
		if st == Pass {
			reason = ""
		}
		rep.Results = append(rep.Results, Result{ID: ch.id, Rule: ch.rule, Status: st, Reason: reason})
		switch st {
		case Pass:
			rep.Passed++
		case Fail:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	return rep
}

// Rules lists the suite's check ids and rules, in the order Run runs them.
func Rules() []Result {
	out := make([]Result, len(suite))
	for i, ch := range suite {
		out[i] = Result{ID: ch.id, Rule: ch.rule}
	}
	return out
}
