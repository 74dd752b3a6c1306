//go:build !nofanout

package main

import (
	"net/http"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/fanout"
	"github.com/runnerd/lambda-runner/infra/awsconfig"
	"github.com/runnerd/lambda-runner/infra/config"
)

// fanOut is the client of distributed maps' child invocations: the
// function RUNNER_FANOUT_FUNCTION names, else the function itself at its
// own version, so that a deploy mid-execution cannot mix code. Its AWS
// configuration (AWS_ENDPOINT_URL_LAMBDA included) and lambda client are
// built on the first fan-out, not at start. A build with the nofanout tag
// (FANOUT=off) has none: fanout_off.go.
func fanOut(cfg config.Config, hc *http.Client) (engine.FanOut, error) {
	o := fanout.Options{Function: cfg.FanOutFunction, LoadAWSConfig: awsconfig.Load, HTTPClient: hc}
	if o.Function == "" {
		o.Function, o.Qualifier = cfg.FunctionName, cfg.FunctionVersion
	}
	return fanout.New(o), nil
}
