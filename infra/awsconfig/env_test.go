//go:build awsenv

package awsconfig

import (
	"context"
	"strings"
	"testing"
)

// TestLoadReadsTheEnvironment: the awsenv build's Load is FromEnvironment
// over the process's environment.
func TestLoadReadsTheEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "ap-south-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLOAD")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "load-secret")
	t.Setenv("AWS_CA_BUNDLE", "")
	cfg, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || cfg.Region != "ap-south-1" || creds.AccessKeyID != "AKIDLOAD" {
		t.Errorf("region %q, key %q, %v", cfg.Region, creds.AccessKeyID, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "")
	if _, err := Load(context.Background()); err == nil || !strings.Contains(err.Error(), "AWSCONFIG=full") {
		t.Errorf("without keys: %v", err)
	}
}
