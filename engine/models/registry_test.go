package models

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/runnerd/lambda-runner/protocol"
)

// TestRegistry holds every build (make test also runs it with provider
// build tags) to one rule: a provider is accepted and built exactly when
// it is compiled in, and one that is not gets a message saying so.
// Without tags it also takes each provider out in turn, as a build
// without it would.
func TestRegistry(t *testing.T) {
	check := func(t *testing.T) {
		t.Helper()
		got := Providers()
		if !slices.IsSorted(got) {
			t.Errorf("Providers() = %v, not sorted", got)
		}
		c := &Clients{LoadAWSConfig: func(context.Context) (aws.Config, error) { return aws.Config{Region: "us-east-1"}, nil }}
		for _, name := range knownProviders {
			m := protocol.Model{Role: "r", Provider: name, Model: "m"}
			_, tableErr := NewTable("runtime.models", []protocol.Model{m})
			p, provErr := c.Provider(context.Background(), m)
			if slices.Contains(got, name) {
				if tableErr != nil || provErr != nil || p == nil {
					t.Errorf("%s compiled in: table error %v, provider %v, error %v", name, tableErr, p, provErr)
				}
				continue
			}
			fe := fieldErrors(tableErr)
			if len(fe) != 1 || fe[0].Path != "runtime.models[0].provider" || !strings.Contains(fe[0].Message, `provider "`+name+`" is not compiled into this runner`) {
				t.Errorf("%s not compiled in: table errors %v", name, fe)
			}
			if provErr == nil || !strings.Contains(provErr.Error(), "not compiled into this runner") {
				t.Errorf("%s not compiled in: Provider error %v", name, provErr)
			}
		}
		fe := fieldErrors(func() error {
			_, err := NewTable("RUNNER_MODELS", []protocol.Model{{Role: "r", Provider: "x", Model: "m"}})
			return err
		}())
		if len(fe) != 1 || !strings.HasPrefix(fe[0].Message, `unknown provider "x" (want `) {
			t.Errorf("unknown provider: %v", fe)
		}
	}
	t.Run("this build", check)
	for _, name := range Providers() {
		t.Run("without "+name, func(t *testing.T) {
			b := builders[name]
			delete(builders, name)
			defer func() { builders[name] = b }()
			if slices.Contains(Providers(), name) {
				t.Fatalf("Providers() still lists %s", name)
			}
			check(t)
		})
	}
}

func TestProviderList(t *testing.T) {
	saved := builders
	defer func() { builders = saved }()
	for _, tc := range []struct {
		have []string
		want string
	}{
		{nil, "none: this build has no model provider"},
		{[]string{ProviderBedrock}, "bedrock"},
		{[]string{ProviderBedrock, ProviderOpenAI}, "openai or bedrock"},
		{knownProviders, "openai, anthropic or bedrock"},
	} {
		builders = map[string]builder{}
		for _, name := range tc.have {
			builders[name] = func(context.Context, *Clients, protocol.Model) (Provider, error) { return nil, nil }
		}
		if got := providerList(); got != tc.want {
			t.Errorf("providerList() with %v = %q, want %q", tc.have, got, tc.want)
		}
	}
}
