package wftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/runnerd/lambda-runner/engine"
	_ "github.com/runnerd/lambda-runner/engine/nodes" // the built-in node kinds
	"github.com/runnerd/lambda-runner/functions/wiring"
	"github.com/runnerd/lambda-runner/infra/config"
	"github.com/runnerd/lambda-runner/protocol"
)

// Exit codes of Run.
const (
	ExitPass    = 0 // every case passed
	ExitFail    = 1 // a case failed
	ExitInvalid = 2 // a test file, or its workflow, is invalid
)

// Options configure Run.
type Options struct {
	// Run, when not nil, selects the cases whose name it matches.
	Run *regexp.Regexp
	// JSON prints a machine report instead of lines.
	JSON bool
	// Update rewrites each case's expect from what it got.
	Update bool
	// Record runs each case against the real services its runtime names,
	// through the runner's egress guard as configured by the environment
	// (Getenv), and rewrites its mocks from what they answered.
	Record bool
	// Cover prints the nodes never run and the when conditions never seen
	// true or false, over all cases.
	Cover bool
	// CodeWorker is the sandbox worker of code nodes; "" finds it as the
	// runner does (RUNNER_CODE_WORKER, else beside this executable).
	CodeWorker string
	// Getenv reads RUNNER_CODE_WORKER; os.Getenv if nil.
	Getenv func(string) string
	// Parallel is how many cases run at once; 0 means GOMAXPROCS.
	Parallel int
	// Version names the runner to MCP servers.
	Version string
}

// Result is the report of one case.
type Result struct {
	Name       string   `json:"name"`
	File       string   `json:"file"`
	Status     string   `json:"status"` // pass, fail or invalid
	DurationMs int64    `json:"durationMs"`
	Diffs      []diff   `json:"differences,omitempty"`
	Failures   []string `json:"failures,omitempty"`
	Problems   []string `json:"problems,omitempty"`

	got   *got
	cover *caseCover
}

// Find lists the test files under paths: a file as given, a directory's
// *.test.json files at any depth, sorted.
func Find(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".test.json") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Run runs the cases of the test files under paths, reports them to w and
// returns the exit code.
func Run(ctx context.Context, w io.Writer, paths []string, o Options) int {
	files, err := Find(paths)
	if err != nil {
		fmt.Fprintln(w, err)
		return ExitInvalid
	}
	r := newRunner(o)
	defer r.close()
	results := r.runAll(ctx, files)
	return report(w, results, o)
}

// runner holds what the cases share: the code sandbox.
type runner struct {
	o       Options
	code    engine.CodeRunner
	codeErr error
}

func newRunner(o Options) *runner {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	r := &runner{o: o}
	cfg := config.Config{CodeWorker: o.CodeWorker}
	if cfg.CodeWorker == "" {
		cfg.CodeWorker = o.Getenv("RUNNER_CODE_WORKER")
	}
	r.code, r.codeErr = wiring.CodePool(cfg, engine.DefaultLimits().WithDefaults())
	return r
}

// close stops the sandbox's workers.
func (r *runner) close() {
	if c, ok := r.code.(interface{ Close() }); ok {
		c.Close()
	}
}

func (r *runner) runAll(ctx context.Context, files []string) []*Result {
	n := r.o.Parallel
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	results := make([]*Result, len(files))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, f := range files {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = r.runFile(ctx, f)
		})
	}
	wg.Wait()
	return slices.DeleteFunc(results, func(res *Result) bool { return res == nil })
}

// runFile runs the case of one file; nil when --run leaves it out.
func (r *runner) runFile(ctx context.Context, path string) *Result {
	l, err := load(path)
	if err != nil {
		return invalid(path, path, err)
	}
	if r.o.Run != nil && !r.o.Run.MatchString(l.Name) {
		return nil
	}
	res := &Result{Name: l.Name, File: path}
	start := time.Now()
	var g *got
	var recErr error
	if r.o.Record {
		g, recErr, err = r.record(ctx, l)
	} else {
		g, err = r.runCase(ctx, l)
	}
	res.DurationMs = time.Since(start).Milliseconds()
	if err != nil {
		out := invalid(path, l.Name, err)
		out.DurationMs = res.DurationMs
		return out
	}
	if recErr != nil {
		res.Status, res.Failures = "fail", []string{"--record: " + recErr.Error() + "; the file is left unchanged"}
		return res
	}
	res.got = g
	res.cover = g.cover(l)
	res.Failures = g.failures
	if l.Expect != nil {
		res.Diffs = compare(l.Expect, g)
	}
	res.Status = "pass"
	if len(res.Diffs) > 0 || len(res.Failures) > 0 {
		res.Status = "fail"
	}
	if r.o.Update {
		if err := update(l, g); err != nil {
			res.Failures = append(res.Failures, "--update: "+err.Error())
			res.Status = "fail"
		} else if res.Status == "fail" && len(res.Failures) == 0 {
			res.Status, res.Diffs = "pass", nil // the expectation is what it got now
		}
	}
	return res
}

func invalid(path, name string, err error) *Result {
	res := &Result{Name: name, File: path, Status: "invalid"}
	if fe, ok := err.(*fileError); ok && len(fe.problems) > 0 {
		res.Problems = fe.problems
	} else {
		res.Problems = []string{err.Error()}
	}
	return res
}

// staticAWS is the AWS configuration of mocked Bedrock entries: dummy
// credentials of the test's own, never the environment's.
func staticAWS(context.Context) (aws.Config, error) {
	return aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDRUNNERCTLTEST", "runnerctl-test-not-a-secret", ""),
	}, nil
}

// runCase runs one case against its mocks and gathers what it got. An
// error is an invalid case (exit 2).
func (r *runner) runCase(ctx context.Context, l *loaded) (*got, error) {
	m := newMocks(&l.Mocks, &l.req.Runtime)
	defer m.close()
	g, err := r.execute(ctx, l, config.Config{}, wiring.Options{Dial: m.dial, LoadAWSConfig: staticAWS})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	g.Calls, g.failures = m.calls, slices.Clone(m.failures)
	m.mu.Unlock()
	if r.codeErr != nil && g.Status == "failed" && usesCode(l) {
		g.failures = append(g.failures, r.codeErr.Error())
	}
	return g, nil
}

// execute runs l's request in process with the services cfg and o build
// (o's Name and Version are the runner's), its pinned nodes pinned, and
// reads its events. An error is an invalid case.
func (r *runner) execute(ctx context.Context, l *loaded, cfg config.Config, o wiring.Options) (*got, error) {
	eng := engine.New(engine.DefaultLimits())
	o.Name, o.Version = "runnerctl-test", r.o.Version
	svc, err := wiring.Services(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	eng.Services = svc
	eng.Services.Code = r.code
	l.req.Trace = true // node outputs are compared
	body, err := json.Marshal(&l.req)
	if err != nil {
		return nil, &fileError{name: l.path, msg: err.Error()}
	}
	x, err := eng.PrepareBody(body)
	if err != nil {
		return nil, l.problems(err, r.codeErr)
	}
	if len(l.Mocks.Nodes) > 0 {
		pins := make(map[string]engine.Pin, len(l.Mocks.Nodes))
		for id, nm := range l.Mocks.Nodes {
			p := engine.Pin{Output: nm.Output}
			if nm.Error != nil {
				p.Error = &engine.NodeError{Code: protocol.Code(nm.Error.Code), Message: nm.Error.Message}
			}
			pins[id] = p
		}
		if err := x.SetPins(pins); err != nil {
			return nil, &fileError{name: l.path, msg: "mocks.nodes: " + err.Error()}
		}
	}
	s := &sink{}
	x.Run(ctx, s)
	eng.WaitClosed()
	return s.got(l), nil
}

// problems is a refused request's problems, each placed in the file that
// holds it as validate places them.
func (l *loaded) problems(err error, codeErr error) error {
	inv, ok := err.(*protocol.Invalid)
	if !ok {
		return &fileError{name: l.path, msg: err.Error()}
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(l.wfSrc, &top)
	_, whole := top["workflow"]
	inCase := map[string]bool{"input": l.Input != nil, "runtime": l.Runtime != nil, "permissions": l.Permissions != nil,
		"authorization": l.Authorization != nil, "toolPolicies": l.ToolPolicies != nil, "consentAvailable": l.ConsentAvailable != nil}
	fe := &fileError{name: l.path}
	for _, d := range inv.Details {
		head, _, _ := strings.Cut(d.Path, ".")
		head, _, _ = strings.Cut(head, "[")
		name, src, path := l.wfName, l.wfSrc, d.Path
		switch {
		case inCase[head] || (l.wfName == l.path && head == "workflow"):
			name, src = l.path, l.src
		case head == "workflow" && !whole:
			path = strings.TrimPrefix(strings.TrimPrefix(d.Path, "workflow"), ".")
		case head != "workflow" && !whole:
			name, src = l.path, l.src
		}
		pos := name
		if off, ok := protocol.Locate(src, []string{path})[path]; ok {
			line, col := protocol.LineColumn(src, off)
			pos = fmt.Sprintf("%s:%d:%d", name, line, col)
		}
		p := d.Path
		if path != d.Path {
			p = path
		}
		if p != "" {
			p += ": "
		}
		msg := d.Message
		if codeErr != nil && strings.Contains(msg, "code") && strings.Contains(msg, "not") {
			msg += " (" + codeErr.Error() + ")"
		}
		fe.problems = append(fe.problems, pos+": "+p+msg)
	}
	if len(fe.problems) == 0 {
		fe.problems = []string{l.path + ": " + err.Error()}
	}
	return fe
}

// usesCode reports whether the case's workflow names code nodes.
func usesCode(l *loaded) bool {
	return strings.Contains(string(l.req.Workflow), `"code"`)
}

// report writes the results and returns the exit code.
func report(w io.Writer, results []*Result, o Options) int {
	code := ExitPass
	for _, res := range results {
		switch res.Status {
		case "invalid":
			code = ExitInvalid
		case "fail":
			if code == ExitPass {
				code = ExitFail
			}
		}
	}
	if o.JSON {
		rep := struct {
			Cases   []*Result    `json:"cases"`
			Passed  int          `json:"passed"`
			Failed  int          `json:"failed"`
			Invalid int          `json:"invalid"`
			Cover   *coverReport `json:"cover,omitempty"`
		}{Cases: results}
		for _, res := range results {
			switch res.Status {
			case "pass":
				rep.Passed++
			case "fail":
				rep.Failed++
			default:
				rep.Invalid++
			}
		}
		if o.Cover {
			rep.Cover = coverage(results)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return code
	}
	passed := 0
	for _, res := range results {
		switch res.Status {
		case "pass":
			passed++
			fmt.Fprintf(w, "PASS %s (%d ms)\n", clean(res.Name), res.DurationMs)
		case "fail":
			fmt.Fprintf(w, "FAIL %s (%d ms)\n", clean(res.Name), res.DurationMs)
			for _, f := range res.Failures {
				fmt.Fprintf(w, "    %s\n", clean(f))
			}
			for _, d := range res.Diffs {
				fmt.Fprintf(w, "    %s\n", clean(d.String()))
			}
		default:
			fmt.Fprintf(w, "INVALID %s\n", clean(res.Name))
			for _, p := range res.Problems {
				fmt.Fprintf(w, "    %s\n", clean(p))
			}
		}
	}
	if o.Cover {
		coverage(results).write(w)
	}
	fmt.Fprintf(w, "%d of %d case(s) passed\n", passed, len(results))
	return code
}

// clean keeps control characters of a workflow's own names off the
// terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
