package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnerd/lambda-runner/infra/urlfront"
)

// defaultInvokeURL is where `runnerctl bridge` invokes the function by
// default: aws-lambda-rie's invoke API on the port docs/deploy.md starts
// it on.
const defaultInvokeURL = "http://127.0.0.1:9000/2015-03-31/functions/function/invocations"

func newBridgeCmd(env *Env) *cobra.Command {
	var invoke, listen string
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Serve a function under a Lambda invoke API (aws-lambda-rie) as its function URL would",
		Long: `bridge listens for plain HTTP on --listen and plays the Lambda function URL in
front of a function that only an invoke API serves (the runtime interface
emulator aws-lambda-rie, sam local start-lambda): each request becomes a
function URL event (payload 2.0), the function is invoked with it at --invoke,
and its answer, streamed or buffered, goes back as the HTTP response. The
runner's own checks (tokens, limits) apply as deployed; the bridge adds none.
So runnerctl caps, run and check work against the Lambda build offline:

  aws-lambda-rie --runtime-interface-emulator-address 127.0.0.1:9000 \
    --runtime-api-address 127.0.0.1:9001 bin/bootstrap-local &
  runnerctl bridge &                      # 127.0.0.1:8088 -> 127.0.0.1:9000
  runnerctl check --url http://127.0.0.1:8088

It runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(invoke)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return exit(ExitInvalid, fmt.Errorf("--invoke %q: want the invoke API's http:// URL, e.g. %s", invoke, defaultInvokeURL))
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return exit(ExitUnavailable, fmt.Errorf("--listen: %w", err))
			}
			srv := &http.Server{
				Handler:           &urlfront.Front{Invoke: invoke},
				ReadHeaderTimeout: 10 * time.Second,
			}
			fmt.Fprintf(env.Err, "runnerctl bridge: serving http://%s as the function URL of %s\n", ln.Addr(), invoke)
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return exit(ExitFailed, err)
			case <-cmd.Context().Done():
			}
			// Streams in flight get a moment to end, then are cut.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return exit(ExitFailed, err)
			}
			srv.Close()
			<-done
			return nil
		},
	}
	cmd.Flags().StringVar(&invoke, "invoke", defaultInvokeURL, "the function's invoke URL (aws-lambda-rie: http://ADDR/2015-03-31/functions/function/invocations)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8088", "the address to serve plain HTTP on")
	return cmd
}
