package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go/logging"
	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/rotate"
)

func newTokenCmd(env *Env) *cobra.Command {
	var secretID string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Rotate or inspect the runner's tokens in Secrets Manager",
		Long: `token works on the secret named by RUNNER_TOKEN_SECRET_ID (or --secret-id), with
the usual AWS credentials and region (AWS_PROFILE, AWS_REGION, …;
AWS_ENDPOINT_URL_SECRETS_MANAGER points it elsewhere).`,
	}
	cmd.PersistentFlags().StringVar(&secretID, "secret-id", "", "the secret's name or ARN (env RUNNER_TOKEN_SECRET_ID)")
	client := func(c *cobra.Command) (*secretsmanager.Client, string, error) {
		id := secretID
		if id == "" {
			id = env.Getenv("RUNNER_TOKEN_SECRET_ID")
		}
		if id == "" {
			return nil, "", exit(ExitInvalid, errors.New("no secret: set --secret-id or RUNNER_TOKEN_SECRET_ID"))
		}
		cfg, err := loadAWSConfig(c.Context())
		if err != nil {
			return nil, "", err
		}
		return secretsmanager.NewFromConfig(cfg), id, nil
	}
	var name string
	rotateCmd := &cobra.Command{
		Use:   "rotate",
		Short: "Put a new token; the previous one stays accepted until the next rotation",
		Long: `rotate puts a new version of the secret with a fresh token and prints the token
once. Secrets Manager makes it AWSCURRENT and the version it replaces
AWSPREVIOUS; the runner accepts both, so servers move to the new token without
downtime. The runner picks the new version up within its token refresh interval
(30 s by default) of the first request that uses it.

With --name, the secret holds one token per server ({"tokens":{"NAME":"rt_…",
…}}): the token named NAME is replaced and every other server's token is kept,
so rotating one server never refuses another. A secret in another form (one
token, a list) is converted, its tokens kept as token-1, token-2, ….

Without --name, the secret's whole value becomes one fresh token
({"tokens":["rt_…"]}); a secret of named tokens is refused, since that would
drop the other servers' tokens. Rotate a token again only once its server uses
the new one: that retires the old one.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			api, id, err := client(c)
			if err != nil {
				return err
			}
			var r rotate.Rotated
			if c.Flags().Changed("name") {
				r, err = rotate.RotateNamed(c.Context(), api, id, name)
			} else {
				r, err = rotate.Rotate(c.Context(), api, id)
			}
			if errors.Is(err, rotate.ErrNamed) {
				return exit(ExitInvalid, err)
			}
			if err != nil {
				return exit(ExitFailed, err)
			}
			what := "new token"
			if c.Flags().Changed("name") {
				what = fmt.Sprintf("new token for %s, the other servers' tokens kept", name)
			}
			fmt.Fprintf(env.Err, "secret %s: new AWSCURRENT version %s (%s); the previous version stays accepted until the next rotation\n", id, r.VersionID, what)
			fmt.Fprintln(env.Out, r.Token)
			return nil
		},
	}
	rotateCmd.Flags().StringVar(&name, "name", "", "the server whose token to rotate, in a secret of one token per server")
	cmd.AddCommand(rotateCmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Describe the accepted versions, tokens as fingerprints",
		Long:  "show lists the AWSCURRENT and AWSPREVIOUS versions, whose tokens the runner accepts, with each token's fingerprint (the start of its SHA-256), never the token.",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			api, id, err := client(c)
			if err != nil {
				return err
			}
			vs, err := rotate.Show(c.Context(), api, id)
			if err != nil {
				return exit(ExitFailed, err)
			}
			tw := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STAGE\tVERSION\tCREATED\tTOKENS ([name] SHA-256 fingerprint)")
			for _, v := range vs {
				fps := slices.Clone(v.Fingerprints)
				for i := range v.Names {
					fps[i] = v.Names[i] + " " + fps[i]
				}
				toks := strings.Join(fps, ", ")
				if v.Problem != "" {
					toks = "unusable: " + v.Problem
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Stage, v.VersionID, v.Created.UTC().Format(time.RFC3339), toks)
			}
			return tw.Flush()
		},
	})
	return cmd
}

// errNoAWS is what runnerctl says, rather than the SDK's own errors (an
// instance metadata probe's, typically), when neither a region nor
// credentials are configured.
var errNoAWS = errors.New("no AWS credentials or region found: set AWS_REGION and credentials " +
	"(AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run aws sso login / aws configure)")

// loadAWSConfig loads the SDK's default configuration without its log
// output (the instance metadata client warns "falling back to IMDSv1" on
// a machine without it) and checks up front that a region and credentials
// were found, so that their absence is said plainly.
func loadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithLogger(logging.Nop{}), awsconfig.WithClientLogMode(0))
	if err != nil {
		return aws.Config{}, exit(ExitUnavailable, fmt.Errorf("AWS configuration: %w", err))
	}
	if cfg.Region == "" {
		return aws.Config{}, exit(ExitUnavailable, errNoAWS)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		// The default chain ends at the instance role: when it is what
		// was tried, nothing else was configured.
		if aws.IsCredentialsProvider(cfg.Credentials, &ec2rolecreds.Provider{}) {
			return aws.Config{}, exit(ExitUnavailable, errNoAWS)
		}
		return aws.Config{}, exit(ExitUnavailable, fmt.Errorf("AWS credentials: %w", err))
	}
	return cfg, nil
}
