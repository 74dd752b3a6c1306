package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
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
		cfg, err := awsconfig.LoadDefaultConfig(c.Context())
		if err != nil {
			return nil, "", exit(ExitUnavailable, fmt.Errorf("AWS configuration: %w", err))
		}
		return secretsmanager.NewFromConfig(cfg), id, nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate",
		Short: "Put a new token; the previous one stays accepted until the next rotation",
		Long: `rotate puts a new version of the secret holding one fresh token and prints the
token once. Secrets Manager makes it AWSCURRENT and the version it replaces
AWSPREVIOUS; the runner accepts both, so servers move to the new token without
downtime. The runner picks the new version up within its token refresh interval
(30 s by default) of the first request that uses it. Rotate again only once
every server uses the new token: that retires the old one.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			api, id, err := client(c)
			if err != nil {
				return err
			}
			r, err := rotate.Rotate(c.Context(), api, id)
			if err != nil {
				return exit(ExitFailed, err)
			}
			fmt.Fprintf(env.Err, "secret %s: new AWSCURRENT version %s; the previous version stays accepted until the next rotation\n", id, r.VersionID)
			fmt.Fprintln(env.Out, r.Token)
			return nil
		},
	})
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
			fmt.Fprintln(tw, "STAGE\tVERSION\tCREATED\tTOKENS (SHA-256 fingerprints)")
			for _, v := range vs {
				toks := strings.Join(v.Fingerprints, ", ")
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
