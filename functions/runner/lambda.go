package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/runnerd/lambda-runner/infra/config"
)

// serveLambda serves the handler under the Lambda runtime. It is replaced
// by the streaming function URL and API Gateway adapters.
func serveLambda(ctx context.Context, h http.Handler, cfg config.Config, logger *slog.Logger) error {
	return errors.New("lambda mode not built yet")
}
