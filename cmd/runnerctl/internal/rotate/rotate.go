// Package rotate rotates the runner's bearer tokens in AWS Secrets Manager
// without downtime. A rotation puts a new secret value; Secrets Manager
// makes it AWSCURRENT and moves the value it replaces to AWSPREVIOUS, whose
// tokens the runner keeps accepting (infra/secrets). Servers therefore
// switch to the new token at their own pace, until the next rotation
// retires the old one.
//
// A secret shared by several servers holds one token per server, by name
// ({"tokens":{"server-a":"rt_…","server-b":"rt_…"}}): RotateNamed replaces
// one server's token and keeps every other one. Rotate, for a secret of
// one unnamed token, replaces the whole value.
package rotate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
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

// ErrNamed is returned by Rotate for a secret of named tokens, whose
// value it would replace whole: RotateNamed rotates one of them.
var ErrNamed = errors.New("the secret holds one token per server")

// Rotate puts a new AWSCURRENT version holding one new token, in place of
// whatever the current version holds. It refuses a secret of named tokens
// (an error wrapping ErrNamed that lists the names), since replacing it
// whole would drop every other server's token at the next rotation.
func Rotate(ctx context.Context, api API, secretID string) (Rotated, error) {
	cur, found, err := current(ctx, api, secretID)
	if err != nil {
		return Rotated{}, err
	}
	if found {
		if named, ok, _ := secrets.Named(cur); ok && len(named) > 0 {
			return Rotated{}, fmt.Errorf("secret %q: %w (%s): name the one to rotate (--name)", secretID, ErrNamed, strings.Join(slices.Sorted(maps.Keys(named)), ", "))
		}
	}
	tok, err := NewToken(nil)
	if err != nil {
		return Rotated{}, err
	}
	value, err := json.Marshal(map[string][]string{"tokens": {tok}})
	if err != nil {
		return Rotated{}, err
	}
	return put(ctx, api, secretID, tok, value)
}

// validName is a server's name in a secret: a word an operator types.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// RotateNamed puts a new AWSCURRENT version in which the token named name
// is a new one and every other token of the current version is kept. A
// current version in another form (one token, a list) is carried over
// with its tokens named token-1, token-2, …, so that no server sending
// one of them is refused; a secret without a current version gets one
// holding the named token alone.
func RotateNamed(ctx context.Context, api API, secretID, name string) (Rotated, error) {
	if !validName.MatchString(name) {
		return Rotated{}, fmt.Errorf("token name %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	cur, found, err := current(ctx, api, secretID)
	if err != nil {
		return Rotated{}, err
	}
	named := map[string]string{}
	if found {
		m, ok, err := secrets.Named(cur)
		if err != nil {
			return Rotated{}, fmt.Errorf("%s of secret %q: %w", secrets.StageCurrent, secretID, err)
		}
		if ok {
			named = m
		} else {
			list, err := secrets.Parse(cur)
			if err != nil {
				return Rotated{}, fmt.Errorf("%s of secret %q: %w", secrets.StageCurrent, secretID, err)
			}
			i := 0
			for _, t := range list {
				if t = strings.TrimSpace(t); t == "" {
					continue
				}
				for {
					i++
					if _, taken := named[fmt.Sprintf("token-%d", i)]; !taken {
						break
					}
				}
				named[fmt.Sprintf("token-%d", i)] = t
			}
		}
	}
	tok, err := NewToken(nil)
	if err != nil {
		return Rotated{}, err
	}
	named[name] = tok
	value, err := json.Marshal(map[string]map[string]string{"tokens": named})
	if err != nil {
		return Rotated{}, err
	}
	return put(ctx, api, secretID, tok, value)
}

// current reads the AWSCURRENT value; found is false for a secret without
// one.
func current(ctx context.Context, api API, secretID string) (value string, found bool, err error) {
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(secretID), VersionStage: aws.String(secrets.StageCurrent),
	})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) && strings.Contains(nf.ErrorMessage(), "staging label") {
			return "", false, nil
		}
		return "", false, fmt.Errorf("reading %s of secret %q: %w", secrets.StageCurrent, secretID, err)
	}
	if out.SecretString == nil {
		return "", false, fmt.Errorf("%s of secret %q is binary; the runner reads only string secrets", secrets.StageCurrent, secretID)
	}
	return *out.SecretString, true, nil
}

// put writes value as the new AWSCURRENT version. The version id is
// fresh, so a retried call cannot put two different tokens.
func put(ctx context.Context, api API, secretID, tok string, value []byte) (Rotated, error) {
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
	// Names are the tokens' names, one per fingerprint, when the version
	// holds named tokens.
	Names []string `json:"names,omitempty"`
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
				if named, ok, _ := secrets.Named(*got.SecretString); ok {
					for _, n := range slices.Sorted(maps.Keys(named)) {
						ver.Names = append(ver.Names, n)
						ver.Fingerprints = append(ver.Fingerprints, Fingerprint(strings.TrimSpace(named[n])))
					}
					break
				}
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
