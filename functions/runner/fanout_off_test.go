//go:build nofanout

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/infra/telemetry"
)

// A FANOUT=off build that is asked for distributed maps stops at start,
// naming the variable, instead of advertising a fan-out it cannot make;
// without the variable it starts with no fan-out.
func TestFanOutOff(t *testing.T) {
	_, err := services(context.Background(), testConfig(t, map[string]string{
		"RUNNER_MAX_FANOUT_INVOCATIONS": "4", "AWS_LAMBDA_FUNCTION_NAME": "runner",
	}), telemetry.Propagating)
	if err == nil || !strings.Contains(err.Error(), "RUNNER_MAX_FANOUT_INVOCATIONS") || !strings.Contains(err.Error(), "FANOUT=off") {
		t.Fatalf("services = %v, want an error naming RUNNER_MAX_FANOUT_INVOCATIONS and FANOUT=off", err)
	}
	svc, err := services(context.Background(), testConfig(t, nil), telemetry.Propagating)
	if err != nil {
		t.Fatal(err)
	}
	if svc.FanOut != nil {
		t.Fatal("a nofanout build has a fan-out client")
	}
}
