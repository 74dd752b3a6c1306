package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/client"
	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/progress"
	"github.com/runnerd/lambda-runner/protocol"
)

type runFlags struct {
	input    string
	json     bool
	saveTest string
}

func newRunCmd(env *Env, g *global) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run FILE|-",
		Short: "Start an execution and follow it",
		Long: `run sends an execution request and follows its events.

FILE is a whole execution request ({"version":1,"workflow":…}) or a bare workflow
document ({"nodes":[…]}), which is sent as version 1 with --input.

On a terminal it shows one line per node (map items and child workflow nodes
under their parent) with state, attempt, duration, permission decisions and a
model role that fell back to general, then every node that failed (map items
by their full id, each[3].fetch) with its code and whole message, wrapped to
the terminal's width, then the output or the error. Otherwise, or with --json, it copies the NDJSON
stream to standard output byte for byte.

Exit codes: 0 completed, 1 failed, 2 invalid request (400), 3 suspended for
consent, 4 unauthorized or runner unavailable.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: jsonFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExecution(cmd.Context(), env, g, f, args[0])
		},
	}
	cmd.Flags().StringVar(&f.input, "input", "", "the execution input: a JSON value or a file holding one")
	cmd.Flags().BoolVar(&f.json, "json", false, "copy the NDJSON stream through even on a terminal")
	cmd.Flags().StringVar(&f.saveTest, "save-test", "", "write a test case of the finished run to this file (runnerctl test; docs/testing.md)")
	return cmd
}

func jsonFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
}

// inputValue reads --input: JSON itself, or else a file holding JSON.
func inputValue(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	b, err := os.ReadFile(s)
	if err != nil {
		return nil, fmt.Errorf("--input is neither JSON nor a readable file: %w", err)
	}
	return b, nil
}

// terminalSize reports whether w is a terminal, and its size.
func terminalSize(w io.Writer) (width, height int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return 0, 0, false
	}
	width, height, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 || height <= 0 {
		width, height = 80, 24
	}
	return width, height, true
}

func runExecution(ctx context.Context, env *Env, g *global, f *runFlags, name string) (err error) {
	src, err := readSource(env, name)
	if err != nil {
		return exit(ExitInvalid, err)
	}
	input, err := inputValue(f.input)
	if err != nil {
		return exit(ExitInvalid, err)
	}
	body, err := client.BuildRequest(src, input)
	if err != nil {
		return exit(ExitInvalid, fmt.Errorf("%s: %w", name, err))
	}
	var saved *savedRun
	if f.saveTest != "" {
		if body, err = traced(body); err != nil {
			return exit(ExitInvalid, fmt.Errorf("%s: %w", name, err))
		}
		saved = &savedRun{}
	}
	stream, err := g.client(env).Execute(ctx, body)
	if err != nil {
		return refusal(env, err, f.json)
	}
	defer stream.Close()
	if saved != nil {
		stream.Observe = saved.observe
		defer func() {
			if serr := saved.save(f.saveTest, name, body); serr != nil && err == nil {
				err = exit(ExitFailed, serr)
			}
		}()
	}
	width, height, tty := terminalSize(env.Out)
	if f.json || !tty {
		return passthrough(env, stream)
	}
	return follow(ctx, env, stream, body, width, height)
}

// refusal reports a request the runner did not accept.
func refusal(env *Env, err error, raw bool) error {
	var se *client.StatusError
	if !errors.As(err, &se) {
		return exit(ExitUnavailable, fmt.Errorf("cannot reach the runner: %w", err))
	}
	if raw && len(se.Body) > 0 {
		env.Out.Write(se.Body)
	}
	switch se.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		// The runner's text may quote the request (a key of the
		// workflow in a path): no control character reaches the terminal.
		fmt.Fprintf(env.Err, "invalid execution (%d %s): %d problem(s)\n", se.Status, progress.Clean(string(se.Response.Error.Code)), max(1, len(se.Response.Error.Details)))
		if len(se.Response.Error.Details) == 0 {
			fmt.Fprintf(env.Err, "  %s\n", progress.Clean(se.Response.Error.Message))
		}
		for _, d := range se.Response.Error.Details {
			path := d.Path
			if path == "" {
				path = "(body)"
			}
			fmt.Fprintf(env.Err, "  %s: %s\n", progress.Clean(path), progress.Clean(d.Message))
		}
		return exit(ExitInvalid, nil)
	case http.StatusUnauthorized:
		return exit(ExitUnavailable, errors.New("unauthorized: the runner refused the token (set RUNNER_TOKEN or --token)"))
	}
	return exit(ExitUnavailable, se)
}

// outcome maps a terminal event to an exit code.
func outcome(ev protocol.Terminal) int {
	switch e := ev.(type) {
	case *protocol.Result:
		if e.Status == protocol.StatusSuspended {
			return ExitSuspended
		}
		return ExitOK
	}
	return ExitFailed
}

// passthrough copies the stream byte for byte, and exits as its terminal
// event says.
func passthrough(env *Env, s *client.Stream) error {
	var last protocol.Terminal
	for {
		line, ev, err := s.Next()
		if len(line) > 0 {
			if _, werr := env.Out.Write(line); werr != nil {
				return exit(ExitFailed, werr)
			}
		}
		if t, ok := ev.(protocol.Terminal); ok {
			last = t
		}
		if line == nil {
			if last == nil {
				if errors.Is(err, io.EOF) {
					err = client.ErrNoTerminal
				}
				return exit(ExitFailed, err)
			}
			return exit(outcome(last), nil)
		}
	}
}

// redrawEvery is the least time between two drawings of the board when
// events arrive.
const redrawEvery = 50 * time.Millisecond

// follow draws the progress board while events arrive, then the outcome.
func follow(ctx context.Context, env *Env, s *client.Stream, body []byte, width, height int) error {
	board := &progress.Board{}
	var req struct {
		Workflow struct {
			Nodes []struct{ ID, Type string } `json:"nodes"`
		} `json:"workflow"`
	}
	if json.Unmarshal(body, &req) == nil {
		for _, n := range req.Workflow.Nodes {
			board.Expect(n.ID, n.Type)
		}
	}
	live := &progress.Live{W: env.Out, Width: width, Height: height}

	done := make(chan struct{})
	defer close(done)
	events := readEvents(s, done)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var (
		id   string
		last protocol.Terminal
		end  error
	)
	live.Draw(board.Lines())
	drawn := time.Now()
loop:
	for {
		select {
		case it, ok := <-events:
			if !ok {
				break loop
			}
			if it.ev == nil {
				end = it.err
				break loop
			}
			if a, isAccepted := it.ev.(*protocol.Accepted); isAccepted {
				id = a.ExecutionID
			}
			if t, isTerminal := it.ev.(protocol.Terminal); isTerminal {
				last = t
			}
			board.Apply(it.ev)
			// A drawing costs every line of the board: drawn for each of
			// a 5,000-item map's 10,000 events, it took 30 s of CPU (0.1 s
			// with --json) and held the runner's stream back. At most one
			// drawing per redrawEvery; the ticker and the end draw the rest.
			if time.Since(drawn) >= redrawEvery {
				live.Draw(board.Lines())
				drawn = time.Now()
			}
		case <-tick.C:
			live.Draw(board.Lines())
			drawn = time.Now()
		case <-ctx.Done():
			return exit(ExitFailed, ctx.Err())
		}
	}
	board.Finish()
	live.Draw(board.Lines())
	if id != "" {
		fmt.Fprintf(env.Out, "execution %s\r\n", progress.Clean(id))
	}
	// The board is cut to the screen, its lines to its width: the
	// failures are listed again below it, whole, wrapped rather than cut.
	for _, line := range board.Summary(width) {
		fmt.Fprintf(env.Out, "%s\r\n", line)
	}
	return report(env, last, end)
}

// report prints how the execution ended, after the board, and returns the
// exit code's error: end is why the stream stopped when no terminal event
// came.
func report(env *Env, last protocol.Terminal, end error) error {
	switch t := last.(type) {
	case nil:
		if end == nil || errors.Is(end, io.EOF) {
			end = client.ErrNoTerminal
		}
		return exit(ExitFailed, end)
	case *protocol.Result:
		if t.Status == protocol.StatusSuspended {
			fmt.Fprintf(env.Out, "suspended: consent needed for\r\n")
			for _, sp := range t.Suspended {
				fmt.Fprintf(env.Out, "  %s\r\n", progress.Clean(fmt.Sprintf("%s: %s %s", sp.NodeID, sp.Action, sp.Resource)))
				if strings.Contains(sp.Resource, "*") {
					// A tool may be named "*": as a grant, its resource is a
					// pattern that allows every tool of the toolset.
					fmt.Fprintf(env.Out, "    warning: this resource is a pattern: granted, it allows more than this action\r\n")
				}
			}
			fmt.Fprintf(env.Out, "relaunch with authorization.grants for these to go on\r\n")
			return exit(ExitSuspended, nil)
		}
		fmt.Fprintf(env.Out, "completed in %s\r\n", progress.Millis(t.DurationMs))
		// JSON escapes C0 controls but not C1 (U+0080–U+009F): a CSI or
		// OSC of the output would reach the terminal.
		for line := range strings.SplitSeq(pretty(t.Output), "\n") {
			fmt.Fprint(env.Out, progress.Clean(line)+"\r\n")
		}
		return exit(ExitOK, nil)
	case *protocol.Error:
		at := ""
		if t.Error.NodeID != "" {
			at = " at node " + t.Error.NodeID
		}
		fmt.Fprintf(env.Out, "%s\r\n", progress.Clean(fmt.Sprintf("failed%s: %s: %s", at, t.Error.Code, t.Error.Message)))
		return exit(ExitFailed, nil)
	}
	return exit(outcome(last), nil)
}

func pretty(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// streamItem is an event of the stream, or (ev nil) why it ended.
type streamItem struct {
	ev  protocol.Event
	err error
}

// readEvents reads s on a goroutine of its own, so that the board can
// redraw while no event comes; it stops when done is closed.
func readEvents(s *client.Stream, done <-chan struct{}) <-chan streamItem {
	events := make(chan streamItem)
	go func() {
		defer close(events)
		for {
			line, ev, err := s.Next()
			if line == nil {
				select {
				case events <- streamItem{err: err}:
				case <-done:
				}
				return
			}
			if ev == nil {
				continue // an event of a newer protocol: not for this board
			}
			select {
			case events <- streamItem{ev: ev}:
			case <-done:
				return
			}
		}
	}()
	return events
}
