//go:build nofanout

package main

import (
	"errors"
	"net/http"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/infra/config"
)

// fanOut refuses: a nofanout build (FANOUT=off, docs/deploy.md) leaves the
// Lambda client out, so asking for distributed maps stops the process at
// start rather than failing every distributed map later.
func fanOut(config.Config, *http.Client) (engine.FanOut, error) {
	return nil, errors.New("RUNNER_MAX_FANOUT_INVOCATIONS: this build has no distributed maps (built with FANOUT=off, the nofanout tag); unset it or deploy a build with FANOUT=on")
}
