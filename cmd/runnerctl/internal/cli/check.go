package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/progress"
	"github.com/runnerd/lambda-runner/conformance"
)

func newCheckCmd(env *Env, g *global) *cobra.Command {
	var (
		raw     bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check [URL]",
		Short: "Check that a runner speaks Runner protocol v1",
		Long: `check runs the conformance suite against any runner (URL, or --url) with the
token: authentication before anything else, the capabilities document, refusals
before acceptance, the NDJSON stream's order and framing, node types, the
general model role fallback and consent suspension. Checks the runner's
capabilities make inapplicable are skipped. It exits 1 if any check fails,
and 4, running no check, when what answers at the URL is not a runner (its
GET /v1/capabilities is a 404, an HTML page, not JSON, or JSON without
protocolVersions) or nothing answers. Its executions run only set and fail nodes; the model and tool nodes of
the fallback and consent checks are denied or suspended before they run, and
name endpoints under .invalid.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := g.url
			if len(args) == 1 {
				url = args[0]
			}
			if g.token == "" {
				return exit(ExitInvalid, errors.New("check needs a valid token: set RUNNER_TOKEN or --token"))
			}
			c := &conformance.Checker{URL: url, Token: g.token, HTTP: env.HTTP, Timeout: timeout}
			rep := c.Run(cmd.Context())
			if raw {
				enc := json.NewEncoder(env.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if rep.Stopped == "" {
				writeReport(env.Out, rep)
			}
			if rep.Stopped != "" && !raw {
				return exit(ExitUnavailable, fmt.Errorf("%s: no check ran: %s", url, rep.Stopped))
			}
			if rep.Stopped != "" {
				return exit(ExitUnavailable, nil)
			}
			if !rep.OK() {
				return exit(ExitFailed, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&raw, "json", false, "print the report as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "the longest any one check may take")
	return cmd
}

func writeReport(w io.Writer, rep conformance.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CHECK\tRESULT\tRULE / REASON\n")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Status, r.Rule)
		if r.Reason != "" {
			// A reason quotes the runner's answers: no control character
			// (tabs included, which would break the columns) gets through.
			fmt.Fprintf(tw, "\t\t→ %s\n", progress.Clean(r.Reason))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d skipped\n", rep.URL, rep.Passed, rep.Failed, rep.Skipped)
}
