package rotate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/rotate"
	"github.com/runnerd/lambda-runner/infra/secrets"
	"github.com/runnerd/lambda-runner/infra/secrets/smtest"
	"github.com/runnerd/lambda-runner/infra/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// accepts asks the runner's own token source, as deployed, about tok.
func accepts(t *testing.T, src *secrets.Source, tok string) bool {
	t.Helper()
	err := src.Verify(context.Background(), tok)
	if err != nil && !errors.Is(err, tokens.ErrUnknown) {
		t.Fatalf("Verify: %v", err)
	}
	return err == nil
}

func TestRotationKeepsThePreviousTokenUntilTheNext(t *testing.T) {
	ctx := context.Background()
	sm := smtest.New(t)
	sm.Put("runner-tokens", `{"tokens":["tok-first"]}`)
	client := sm.Client()
	// A refresh on every unknown token, so that the test sees each rotation
	// at once; deployed, the runner sees it within its refresh interval.
	src := secrets.New(client, secrets.Options{SecretID: "runner-tokens", RefreshInterval: time.Nanosecond})
	if !accepts(t, src, "tok-first") {
		t.Fatal("the first token is not accepted before any rotation")
	}

	r1, err := rotate.Rotate(ctx, client, "runner-tokens")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r1.Token, "rt_") || len(r1.Token) < 40 || strings.ContainsAny(r1.Token, " \t,") {
		t.Fatalf("token %q is not one long word", r1.Token)
	}
	if !accepts(t, src, r1.Token) || !accepts(t, src, "tok-first") {
		t.Fatal("after one rotation both the new and the previous token must be accepted")
	}

	r2, err := rotate.Rotate(ctx, client, "runner-tokens")
	if err != nil {
		t.Fatal(err)
	}
	if r2.Token == r1.Token || r2.VersionID == r1.VersionID {
		t.Fatal("two rotations gave the same token or version")
	}
	// The next rotation retires the first token: stale sets expire by TTL,
	// so a fresh source stands for the runner after its cache turned over.
	fresh := secrets.New(client, secrets.Options{SecretID: "runner-tokens"})
	for tok, want := range map[string]bool{r2.Token: true, r1.Token: true, "tok-first": false} {
		if got := accepts(t, fresh, tok); got != want {
			t.Errorf("token %s… accepted %v, want %v", tok[:5], got, want)
		}
	}

	vs, err := rotate.Show(ctx, client, "runner-tokens")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Stage != "AWSCURRENT" || vs[0].VersionID != r2.VersionID || vs[1].Stage != "AWSPREVIOUS" ||
		len(vs[0].Fingerprints) != 1 || vs[0].Fingerprints[0] != rotate.Fingerprint(r2.Token) || vs[1].Fingerprints[0] != rotate.Fingerprint(r1.Token) {
		t.Errorf("show: %+v", vs)
	}
	if sm.Requests("PutSecretValue") != 2 {
		t.Errorf("%d PutSecretValue calls, want 2", sm.Requests("PutSecretValue"))
	}
}

func TestRotateUnknownSecret(t *testing.T) {
	sm := smtest.New(t)
	_, err := rotate.Rotate(context.Background(), sm.Client(), "missing")
	if err == nil || !strings.Contains(err.Error(), `secret "missing"`) || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("err = %v", err)
	}
}

// Rotating one server's token keeps every other server's valid, across
// as many rotations as there are; today's secrets are converted, their
// tokens kept.
func TestRotateNamedKeepsTheOtherServers(t *testing.T) {
	ctx := context.Background()
	sm := smtest.New(t)
	sm.Put("runner-tokens", `{"tokens":["tok-legacy"]}`)
	client := sm.Client()
	fresh := func() *secrets.Source { return secrets.New(client, secrets.Options{SecretID: "runner-tokens"}) }

	a1, err := rotate.RotateNamed(ctx, client, "runner-tokens", "server-a")
	if err != nil {
		t.Fatal(err)
	}
	b1, err := rotate.RotateNamed(ctx, client, "runner-tokens", "server-b")
	if err != nil {
		t.Fatal(err)
	}
	// Two more rotations of server-a: had a rotation dropped the others'
	// tokens, server-b's and the legacy one would be gone by now.
	a2, err := rotate.RotateNamed(ctx, client, "runner-tokens", "server-a")
	if err != nil {
		t.Fatal(err)
	}
	a3, err := rotate.RotateNamed(ctx, client, "runner-tokens", "server-a")
	if err != nil {
		t.Fatal(err)
	}
	src := fresh()
	for tok, want := range map[string]bool{a3.Token: true, a2.Token: true, b1.Token: true, "tok-legacy": true, a1.Token: false} {
		if got := accepts(t, src, tok); got != want {
			t.Errorf("token %s… accepted %v, want %v", tok[:6], got, want)
		}
	}
	vs, err := rotate.Show(ctx, client, "runner-tokens")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 || strings.Join(vs[0].Names, ",") != "server-a,server-b,token-1" || vs[0].Fingerprints[0] != rotate.Fingerprint(a3.Token) {
		t.Errorf("show: %+v", vs)
	}

	// Without a name, a secret of named tokens is refused, not replaced.
	if _, err := rotate.Rotate(ctx, client, "runner-tokens"); !errors.Is(err, rotate.ErrNamed) || !strings.Contains(err.Error(), "server-a, server-b, token-1") {
		t.Errorf("Rotate of a named secret: %v", err)
	}
	if _, err := rotate.RotateNamed(ctx, client, "runner-tokens", "bad name"); err == nil || !strings.Contains(err.Error(), `"bad name"`) {
		t.Errorf("bad name: %v", err)
	}
	if n := sm.Requests("PutSecretValue"); n != 4 {
		t.Errorf("%d PutSecretValue calls, want 4", n)
	}
}
