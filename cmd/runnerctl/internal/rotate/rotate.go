// Package rotate rotates the runner's bearer tokens in AWS Secrets Manager
// without downtime. A rotation puts a new secret value holding one fresh
// token; Secrets Manager makes it AWSCURRENT and moves the value it
// replaces to AWSPREVIOUS, whose tokens the runner keeps accepting
// (infra/secrets). Servers therefore switch to the new token at their own
// pace, until the next rotation retires the old one.
package rotate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/uuid"

	"github.com/runnerd/lambda-runner/infra/secrets"
)

// API is the part of the Secrets Manager client rotation uses;
// *secretsmanager.Client implements it.
type API interface {
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	ListSecretVersionIds(ctx context.Context, in *secretsmanager.ListSecretVersionIdsInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.ListSecretVersionIdsOutput, error)
}

// NewToken returns a fresh bearer token: 32 random bytes, URL-safe base64,
// one word as the runner requires.
func NewToken(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return "rt_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// Fingerprint names a token without revealing it: the first 12 hex digits
// of its SHA-256.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:6])
}

// Rotated is what a rotation did.
type Rotated struct {
	// Token is the new token: shown once, never stored by runnerctl.
	Token string
	// VersionID is the new AWSCURRENT version.
	VersionID string
}

// Rotate puts a new AWSCURRENT version holding one new token. The version
// id is fresh, so a retried call cannot put two different tokens.
func Rotate(ctx context.Context, api API, secretID string) (Rotated, error) {
	tok, err := NewToken(nil)
	if err != nil {
		return Rotated{}, err
	}
	value, err := json.Marshal(map[string][]string{"tokens": {tok}})
	if err != nil {
		return Rotated{}, err
	}
	out, err := api.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId:           aws.String(secretID),
		SecretString:       aws.String(string(value)),
		ClientRequestToken: aws.String(uuid.NewString()),
	})
	if err != nil {
		// SDK errors name the operation and the service's message, never
		// the value sent.
		return Rotated{}, fmt.Errorf("putting a new version of secret %q: %w", secretID, err)
	}
	return Rotated{Token: tok, VersionID: aws.ToString(out.VersionId)}, nil
}

// Version is one accepted version of the secret, described without its
// tokens.
type Version struct {
	Stage        string    `json:"stage"`
	VersionID    string    `json:"versionId"`
	Created      time.Time `json:"created"`
	Fingerprints []string  `json:"fingerprints"`
	// Problem says why the version's tokens could not be read.
	Problem string `json:"problem,omitempty"`
}

// Show describes the AWSCURRENT and AWSPREVIOUS versions: the ones whose
// tokens the runner accepts.
func Show(ctx context.Context, api API, secretID string) ([]Version, error) {
	list, err := api.ListSecretVersionIds(ctx, &secretsmanager.ListSecretVersionIdsInput{SecretId: aws.String(secretID)})
	if err != nil {
		return nil, fmt.Errorf("listing versions of secret %q: %w", secretID, err)
	}
	var out []Version
	for _, stage := range []string{secrets.StageCurrent, secrets.StagePrevious} {
		for _, v := range list.Versions {
			has := false
			for _, s := range v.VersionStages {
				has = has || s == stage
			}
			if !has {
				continue
			}
			ver := Version{Stage: stage, VersionID: aws.ToString(v.VersionId), Created: aws.ToTime(v.CreatedDate)}
			got, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID), VersionId: v.VersionId})
			switch {
			case err != nil:
				ver.Problem = err.Error()
			case got.SecretString == nil:
				ver.Problem = "binary value: the runner accepts no token from it"
			default:
				toks, perr := secrets.Parse(*got.SecretString)
				if perr != nil {
					ver.Problem = perr.Error()
				}
				for _, t := range toks {
					ver.Fingerprints = append(ver.Fingerprints, Fingerprint(t))
				}
			}
			out = append(out, ver)
		}
	}
	return out, nil
}
