package cli

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/wftest"
)

type testFlags struct {
	run        string
	json       bool
	update     bool
	cover      bool
	record     bool
	codeWorker string
}

func newTestCmd(env *Env) *cobra.Command {
	f := &testFlags{}
	cmd := &cobra.Command{
		Use:   "test [PATH…]",
		Short: "Run workflow test cases in process, against mocks",
		Long: `test runs the workflow test cases (*.test.json) found under each PATH
(default "."; directories are searched recursively) in process, with the
runner's own engine and default limits. Models, toolsets and http nodes are
answered by mocks the test serves on the loopback, at the wire: nothing
leaves the machine, and a call no mock answers fails its case, naming it.
Code nodes run for real in the sandbox worker (RUNNER_CODE_WORKER, else
beside runnerctl, or --code-worker). docs/testing.md documents the format.

One line per case: PASS name (12 ms), or FAIL name and each difference at
its path, expected vs got. Exit codes: 0 every case passed, 1 a case failed,
2 a test file (or its workflow) is invalid.

--record runs each case against the real services its runtime names instead
(through the runner's egress guard, as RUNNER_HTTP_ALLOW_CIDRS and
RUNNER_MODEL_ENDPOINTS configure it) and rewrites the case's model, tool and
http mocks from what they answered; keys and secrets are never written. A
case with a request left unanswered fails and its file is left unchanged.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := wftest.Options{JSON: f.json, Update: f.update, Record: f.record, Cover: f.cover, CodeWorker: f.codeWorker, Getenv: env.Getenv, Version: env.Version}
			if f.run != "" {
				re, err := regexp.Compile(f.run)
				if err != nil {
					return exit(ExitInvalid, fmt.Errorf("--run: %w", err))
				}
				o.Run = re
			}
			if code := wftest.Run(cmd.Context(), env.Out, args, o); code != 0 {
				return exit(code, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.run, "run", "", "run only the cases whose name matches this regular expression")
	cmd.Flags().BoolVar(&f.json, "json", false, "print a machine report (JSON)")
	cmd.Flags().BoolVar(&f.update, "update", false, "rewrite each case's expect from what it got")
	cmd.Flags().BoolVar(&f.record, "record", false, "run each case against the real services of its runtime and rewrite its mocks from their answers")
	cmd.Flags().BoolVar(&f.cover, "cover", false, "print the nodes never run (inside maps and child workflows too) and the when conditions never seen true or false")
	cmd.Flags().StringVar(&f.codeWorker, "code-worker", "", "the sandbox worker of code nodes")
	return cmd
}
