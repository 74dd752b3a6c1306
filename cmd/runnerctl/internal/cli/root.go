// Package cli is runnerctl's command tree: each subcommand parses its flags
// and hands the work to the packages that hold it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/client"
	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/progress"
)

// Exit codes, as documented in README.md.
const (
	ExitOK          = 0 // completed; or the command succeeded
	ExitFailed      = 1 // the execution failed; or the command did
	ExitInvalid     = 2 // the request was refused as invalid (400)
	ExitSuspended   = 3 // the execution is suspended for consent
	ExitUnavailable = 4 // unauthorized, or the runner cannot be reached
)

// exitError carries an exit code up through cobra. A nil err means the
// command already said what there was to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func exit(code int, err error) error { return &exitError{code: code, err: err} }

// Env is what runnerctl reads from its surroundings; tests supply their own.
type Env struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads RUNNER_URL and RUNNER_TOKEN; os.Getenv if nil.
	Getenv func(string) string
	// HTTP is the client for runner requests; a default with timeouts if nil.
	HTTP *http.Client
	// Version is runnerctl's own version.
	Version string
}

// global holds the flags every runner command shares.
type global struct {
	url, token string
}

func (g *global) client(env *Env) *client.Client {
	hc := env.HTTP
	if hc == nil {
		// No overall timeout: streams last as long as their execution.
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}}
	}
	return &client.Client{URL: g.url, Token: g.token, HTTP: hc}
}

// Main runs runnerctl with args and returns its exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	root := newRoot(&env)
	root.SetArgs(args)
	root.SetIn(env.In)
	root.SetOut(env.Out)
	root.SetErr(env.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var xe *exitError
	if errors.As(err, &xe) {
		if xe.err != nil {
			fmt.Fprintln(env.Err, "runnerctl:", progress.Clean(xe.err.Error()))
		}
		return xe.code
	}
	// Usage errors (unknown flag, wrong arguments) from cobra.
	fmt.Fprintln(env.Err, "runnerctl:", progress.Clean(err.Error()))
	return ExitInvalid
}

func newRoot(env *Env) *cobra.Command {
	g := &global{}
	root := &cobra.Command{
		Use:   "runnerctl",
		Short: "Run, check and operate Runner protocol v1 runners",
		Long: `runnerctl runs workflows on a runner with live progress, validates them offline,
shows a runner's capabilities, checks that any runner speaks Runner protocol v1,
rotates the runner's bearer tokens in Secrets Manager and draws workflow graphs.

The runner is --url (or RUNNER_URL, by default ` + client.DefaultURL + `, where
"runner -dev" listens) and the token --token (or RUNNER_TOKEN; prefer the
variable, since flags show in process listings).`,
		Version:       env.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	def := func(name, fallback string) string {
		if v := env.Getenv(name); v != "" {
			return v
		}
		return fallback
	}
	root.PersistentFlags().StringVar(&g.url, "url", def("RUNNER_URL", client.DefaultURL), "the runner's base URL (env RUNNER_URL)")
	root.PersistentFlags().StringVar(&g.token, "token", "", "the bearer token (env RUNNER_TOKEN)")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		if g.token == "" {
			g.token = env.Getenv("RUNNER_TOKEN")
		}
	}
	root.AddCommand(
		newRunCmd(env, g),
		newCapsCmd(env, g),
		newBridgeCmd(env),
		newCheckCmd(env, g),
		newGraphCmd(env),
		newTokenCmd(env),
		newValidateCmd(env),
		newTestCmd(env),
	)
	return root
}

// readSource reads a file argument, "-" being standard input.
func readSource(env *Env, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(env.In)
	}
	return os.ReadFile(name)
}
