package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/progress"
	"github.com/runnerd/lambda-runner/protocol"
)

func newCapsCmd(env *Env, g *global) *cobra.Command {
	var (
		raw     bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "caps",
		Short: "Show the runner's capabilities",
		Long:  "caps fetches GET /v1/capabilities and shows it for people; --json prints the document as the runner sent it.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A whole document, not a stream: a runner that drips it
			// forever does not hold runnerctl forever.
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			caps, body, err := g.client(env).Capabilities(ctx)
			if err != nil {
				return refusal(env, err, false)
			}
			if raw {
				_, err := env.Out.Write(body)
				return err
			}
			return writeCaps(env.Out, caps)
		},
	}
	cmd.Flags().BoolVar(&raw, "json", false, "print the raw capabilities document")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "the longest the whole answer may take")
	return cmd
}

// writeCaps summarises capabilities, limits in human units.
func writeCaps(w io.Writer, c protocol.Capabilities) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	// Every string is the runner's: no control character reaches the
	// terminal (nor a tab, which would shift the columns).
	text := progress.Clean
	list := func(s []string) string {
		if len(s) == 0 {
			return "(none)"
		}
		return text(strings.Join(s, ", "))
	}
	fmt.Fprintf(tw, "runner\t%s %s\n", text(c.Runner.Name), text(c.Runner.Version))
	fmt.Fprintf(tw, "protocol versions\t%s\n", strings.Trim(fmt.Sprint(c.ProtocolVersions), "[]"))
	fmt.Fprintf(tw, "node types\t%s\n", list(c.NodeTypes))
	fmt.Fprintf(tw, "model providers\t%s\n", list(c.Runtime.Models.Providers))
	fmt.Fprintf(tw, "model roles\t%s\n", list(c.Runtime.Models.Roles))
	fmt.Fprintf(tw, "toolset transports\t%s\n", list(c.Runtime.Toolsets.Transports))
	fmt.Fprintf(tw, "child workflows\t%s\n", yes(c.Runtime.Workflows))
	fmt.Fprintf(tw, "http\t%s\n", yes(c.Runtime.HTTP))
	fmt.Fprintf(tw, "checkpoints\t%s\n", yes(c.Runtime.Checkpoints))
	fmt.Fprintf(tw, "persistent values\t%s\n", yes(c.Runtime.PersistentValues))
	fmt.Fprintf(tw, "consent\t%s\n", text(c.Runtime.Consent))
	fmt.Fprintf(tw, "streaming\t%s\n", text(c.Streaming.ContentType))
	k := c.Constraints
	fmt.Fprintf(tw, "limits\t\n")
	fmt.Fprintf(tw, "  execution time\t%s\n", time.Duration(k.MaxDurationMs)*time.Millisecond)
	fmt.Fprintf(tw, "  memory\t%d MiB\n", k.MemoryMb)
	fmt.Fprintf(tw, "  memory budget\t%s\n", bytesIEC(k.MemoryBudget))
	fmt.Fprintf(tw, "  request size\t%s\n", bytesIEC(k.MaxRequestBytes))
	fmt.Fprintf(tw, "  output size\t%s\n", bytesIEC(k.MaxOutputBytes))
	fmt.Fprintf(tw, "  event size\t%s\n", bytesIEC(int64(k.MaxEventBytes)))
	fmt.Fprintf(tw, "  nodes\t%d\n", k.MaxNodes)
	fmt.Fprintf(tw, "  concurrency\t%d\n", k.MaxConcurrency)
	fmt.Fprintf(tw, "  map items\t%d\n", k.MaxMapItems)
	fmt.Fprintf(tw, "  child depth\t%d\n", k.MaxChildDepth)
	fmt.Fprintf(tw, "  body nesting\t%d\n", k.MaxDepth)
	fmt.Fprintf(tw, "  input schema\t%s, %d deep\n", bytesIEC(int64(k.MaxSchemaBytes)), k.MaxSchemaDepth)
	fmt.Fprintf(tw, "  stream size\t%s (buffered %s)\n", bytesIEC(k.MaxStreamBytes), bytesIEC(k.MaxBufferedStreamBytes))
	fmt.Fprintf(tw, "  expr steps\t%d\n", k.MaxExprSteps)
	fmt.Fprintf(tw, "  expr memory\t%s\n", bytesIEC(k.MaxExprMemory))
	fmt.Fprintf(tw, "  expressions\t%d\n", k.MaxExpressions)
	if k.MaxFanOutInvocations > 0 {
		fmt.Fprintf(tw, "  fan-out\t%d\n", k.MaxFanOutInvocations)
	} else {
		fmt.Fprintf(tw, "  fan-out\toff\n")
	}
	if slices.Contains(c.NodeTypes, "code") {
		fmt.Fprintf(tw, "  code\t%s, memory %s, logs %s\n", bytesIEC(int64(k.MaxCodeBytes)), bytesIEC(k.MaxCodeMemory), bytesIEC(k.MaxCodeLogBytes))
	}
	return tw.Flush()
}

// bytesIEC writes n in the largest binary unit that keeps it readable.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), 0
	for v >= unit && u < 4 {
		v /= unit
		u++
	}
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + []string{"B", "KiB", "MiB", "GiB", "TiB"}[u]
}
