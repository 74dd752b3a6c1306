package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/graph"
)

func newGraphCmd(env *Env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph FILE|-",
		Short: "Draw a workflow's DAG as Mermaid or Graphviz DOT",
		Long: `graph draws the workflow of FILE (a whole execution request or a bare workflow
document): one box per node with its type, when and onError; map nodes and
child workflow nodes (when the request carries the child in runtime.workflows)
as subgraphs. Edges into a node with a when are dashed.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: jsonFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readSource(env, args[0])
			if err != nil {
				return exit(ExitInvalid, err)
			}
			g, err := graph.Parse(src)
			if err != nil {
				return exit(ExitInvalid, fmt.Errorf("%s: %w", args[0], err))
			}
			switch format {
			case "mermaid":
				return graph.Mermaid(env.Out, g)
			case "dot":
				return graph.DOT(env.Out, g)
			}
			return exit(ExitInvalid, fmt.Errorf("--format %q: want mermaid or dot", format))
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "mermaid or dot")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"mermaid", "dot"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
