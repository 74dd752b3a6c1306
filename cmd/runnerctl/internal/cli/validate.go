package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/engine/sandbox/syntax"
)

func newValidateCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE…",
		Short: "Check workflows offline with the runner's own validation",
		Long: `validate checks each FILE (a whole execution request or a bare workflow
document; "-" is standard input) with the same code the runner runs before
accepting an execution, with its default limits, without running anything or
contacting any host. Each problem is printed as file:line:col: path: message;
warnings are marked and do not fail. It exits 1 if any file has an error.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: jsonFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			eng := engine.New(engine.DefaultLimits())
			// Code nodes are checked as a runner's sandbox checks them
			// (syntax, size), by the same parser in process; Validate
			// evaluates nothing, so no worker is needed.
			eng.Services.Code = syntax.Checker{}
			bad := 0
			for _, name := range args {
				src, err := readSource(env, name)
				if err != nil {
					fmt.Fprintf(env.Out, "%s: %v\n", name, err)
					bad++
					continue
				}
				if writeProblems(env.Out, name, eng.Validate(src)) {
					bad++
				}
			}
			if bad > 0 {
				return exit(ExitFailed, fmt.Errorf("%d of %d file(s) invalid", bad, len(args)))
			}
			return nil
		},
	}
}

// writeProblems prints problems as file:line:col: path: message and reports
// whether any is an error.
func writeProblems(w io.Writer, name string, problems []engine.Problem) (failed bool) {
	for _, p := range problems {
		pos := name
		if p.Line > 0 {
			pos = fmt.Sprintf("%s:%d:%d", name, p.Line, p.Column)
		}
		kind := ""
		if p.Warning {
			kind = "warning: "
		} else {
			failed = true
		}
		path := p.Path
		if path != "" {
			path += ": "
		}
		fmt.Fprintf(w, "%s: %s%s%s\n", pos, kind, path, p.Message)
	}
	return failed
}
