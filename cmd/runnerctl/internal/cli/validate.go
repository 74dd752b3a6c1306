package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/progress"
	"github.com/runnerd/lambda-runner/engine"
	_ "github.com/runnerd/lambda-runner/engine/nodes" // the built-in node kinds
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
				src, err := readSourceAtMost(env, name, MaxValidateBytes)
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

// MaxValidateBytes is the largest document validate reads: a runner's
// default request limit (functions.DefaultMaxRequestBytes), past which it
// answers 413 without parsing: validate says what a runner would.
const MaxValidateBytes = 6 << 20

// readSourceAtMost is readSource refusing more than limit bytes, without
// reading more than that of a file or of standard input.
func readSourceAtMost(env *Env, name string, limit int64) ([]byte, error) {
	var r io.Reader = env.In
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes, the runner's request limit: a runner refuses it (413) unread", limit)
	}
	return b, nil
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
		// A path holds the document's own keys, control characters and
		// all: none reaches the terminal.
		fmt.Fprintf(w, "%s: %s%s%s\n", progress.Clean(pos), kind, progress.Clean(path), progress.Clean(p.Message))
	}
	return failed
}
