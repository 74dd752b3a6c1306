package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/infra/secrets/smtest"
	"github.com/runnerd/lambda-runner/infra/tokens"
)

// The Secrets Manager client is built on the first token check, not at
// start: a malformed AWS setting does not stop startup (nothing AWS is
// loaded then) but fails that check closed, naming the setting, without
// asking Secrets Manager; a good one serves tokens from the secret.
func TestSecretsSourceLoadsOnFirstCheck(t *testing.T) {
	sm := smtest.New(t)
	sm.Put("runner-tokens", "sm-token")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", sm.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDRUNNERTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "runner-test-secret-key")
	cfg := config.Config{TokenSecretID: "runner-tokens"}

	t.Setenv("AWS_RETRY_MODE", "sometimes")
	src, err := tokenSource(cfg)
	if err != nil {
		t.Fatalf("start with a malformed AWS setting: %v", err)
	}
	err = src.Verify(context.Background(), "sm-token")
	if !errors.Is(err, tokens.ErrUnavailable) || !strings.Contains(err.Error(), "AWS_RETRY_MODE") {
		t.Errorf("first check with a malformed AWS setting: %v, want tokens.ErrUnavailable naming AWS_RETRY_MODE", err)
	}
	if n := sm.Requests("GetSecretValue"); n != 0 {
		t.Errorf("Secrets Manager asked %d times without a configuration", n)
	}

	t.Setenv("AWS_RETRY_MODE", "standard")
	src, err = tokenSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := sm.Requests("GetSecretValue"); n != 0 {
		t.Errorf("Secrets Manager asked %d times at start", n)
	}
	if err := src.Verify(context.Background(), "sm-token"); err != nil {
		t.Errorf("token from the secret: %v", err)
	}
	if err := src.Verify(context.Background(), "not-a-token"); !errors.Is(err, tokens.ErrUnknown) {
		t.Errorf("unknown token: %v, want tokens.ErrUnknown", err)
	}
}
