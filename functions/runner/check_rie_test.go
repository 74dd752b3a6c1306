//go:build unix

package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/conformance"
	"github.com/runnerd/lambda-runner/infra/urlfront"
)

// The conformance kit (runnerctl check) passes against the bootstrap as
// Lambda runs it, through function URL events: urlfront plays the
// function URL front, as `runnerctl bridge` (and `make check-lambda`) do.
func TestConformanceUnderRIE(t *testing.T) {
	r := startRIE(t, lambdaEnv(t, nil))
	front := httptest.NewServer(&urlfront.Front{Invoke: r.url, Client: rieClient})
	t.Cleanup(front.Close)
	c := &conformance.Checker{URL: front.URL + "/", Token: testToken, Timeout: 30 * time.Second}
	rep := c.Run(context.Background())
	for _, res := range rep.Results {
		if res.Status == conformance.Fail {
			t.Errorf("%s: %s", res.ID, res.Reason)
		}
		if res.Status == conformance.Skip {
			t.Logf("%s skipped: %s", res.ID, res.Reason)
		}
	}
	if rep.Passed < len(conformance.Rules())-1 {
		t.Errorf("only %d of %d checks passed: %+v", rep.Passed, len(conformance.Rules()), rep)
	}
	if strings.Contains(r.out.String(), testToken) {
		t.Error("a token reached the function's output")
	}
}
