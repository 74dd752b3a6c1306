// Command eino times cloudwego/eino running, in process and with no I/O,
// the shapes the runner's benchmarks run: a chain of n lambda nodes each
// adding one to the output of the one before, and a fan-out of one root,
// n-2 parallel nodes that all need it and one node merging them. Each
// graph is compiled once; Invoke is timed warm, and the median of the runs
// is printed in milliseconds, one line per shape:
//
//	chain 1000 33.012
//
// -mode picks eino's node trigger mode: any (its default, Pregel
// supersteps: the faster here) or all (AllPredecessor, its DAG mode).
//
// It is a module of its own (bench/eino/go.mod) so that eino never enters
// the runner's module or binary. bench/compare.sh (make bench-compare)
// runs it beside the runner over HTTP.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudwego/eino/compose"
)

func main() {
	shapes := flag.String("shapes", "chain:1000,fanout:1000,chain:10000", "comma-separated shape:nodes to time")
	runs := flag.Int("runs", 15, "timed runs of each shape (the median is printed)")
	warm := flag.Int("warm", 3, "untimed runs before them")
	mode := flag.String("mode", "any", "node trigger mode: any (AnyPredecessor, eino's default: Pregel supersteps) or all (AllPredecessor: the DAG mode)")
	flag.Parse()
	trigger := compose.AnyPredecessor
	switch *mode {
	case "any":
	case "all":
		trigger = compose.AllPredecessor
	default:
		fail("-mode %q: want any or all", *mode)
	}
	ctx := context.Background()
	for _, s := range strings.Split(*shapes, ",") {
		kind, num, _ := strings.Cut(s, ":")
		n, err := strconv.Atoi(num)
		if err != nil || n < 3 {
			fail("shape %q: want chain:N or fanout:N with N >= 3", s)
		}
		var invoke func() (int, error)
		var want int
		switch kind {
		case "chain":
			r, err := chain(ctx, n, trigger)
			if err != nil {
				fail("chain %d: %v", n, err)
			}
			invoke, want = func() (int, error) { return r.Invoke(ctx, 0) }, n-1
		case "fanout":
			r, err := fanout(ctx, n, trigger)
			if err != nil {
				fail("fanout %d: %v", n, err)
			}
			invoke, want = func() (int, error) { return r.Invoke(ctx, 0) }, n-2
		default:
			fail("shape %q: unknown kind %q (chain, fanout)", s, kind)
		}
		ms, err := median(invoke, want, *warm, *runs)
		if err != nil {
			fail("%s %d: %v", kind, n, err)
		}
		fmt.Printf("%s %d %.3f\n", kind, n, ms)
	}
}

// chain is n nodes in a row; the first passes its input on (0), each next
// one adds one, so the output is n-1.
func chain(ctx context.Context, n int, trigger compose.NodeTriggerMode) (compose.Runnable[int, int], error) {
	g := compose.NewGraph[int, int]()
	prev := compose.START
	for i := range n {
		key := "n" + strconv.Itoa(i)
		f := func(_ context.Context, in int) (int, error) { return in + 1, nil }
		if i == 0 {
			f = func(_ context.Context, in int) (int, error) { return in, nil }
		}
		if err := g.AddLambdaNode(key, compose.InvokableLambda(f)); err != nil {
			return nil, err
		}
		if err := g.AddEdge(prev, key); err != nil {
			return nil, err
		}
		prev = key
	}
	if err := g.AddEdge(prev, compose.END); err != nil {
		return nil, err
	}
	return compile(ctx, g, n, trigger)
}

// fanout is a root, n-2 nodes that each read the root's output, and a
// merge node that needs them all (their outputs, maps of one key, merged
// by eino) and returns how many it got: n-2.
func fanout(ctx context.Context, n int, trigger compose.NodeTriggerMode) (compose.Runnable[int, int], error) {
	g := compose.NewGraph[int, int]()
	root := func(_ context.Context, in int) (int, error) { return in + 1, nil }
	if err := g.AddLambdaNode("root", compose.InvokableLambda(root)); err != nil {
		return nil, err
	}
	merge := func(_ context.Context, in map[string]int) (int, error) { return len(in), nil }
	if err := g.AddLambdaNode("merge", compose.InvokableLambda(merge)); err != nil {
		return nil, err
	}
	if err := g.AddEdge(compose.START, "root"); err != nil {
		return nil, err
	}
	for i := 1; i < n-1; i++ {
		key := "n" + strconv.Itoa(i)
		f := func(_ context.Context, in int) (map[string]int, error) { return map[string]int{key: in}, nil }
		if err := g.AddLambdaNode(key, compose.InvokableLambda(f)); err != nil {
			return nil, err
		}
		if err := g.AddEdge("root", key); err != nil {
			return nil, err
		}
		if err := g.AddEdge(key, "merge"); err != nil {
			return nil, err
		}
	}
	if err := g.AddEdge("merge", compose.END); err != nil {
		return nil, err
	}
	return compile(ctx, g, n, trigger)
}

// compile compiles g of n nodes in trigger mode. A Pregel run is bounded
// by its steps (the nodes and ten by default; the chain takes n+2): the
// bound is set above that, a DAG run has none.
func compile(ctx context.Context, g *compose.Graph[int, int], n int, trigger compose.NodeTriggerMode) (compose.Runnable[int, int], error) {
	opts := []compose.GraphCompileOption{compose.WithNodeTriggerMode(trigger)}
	if trigger == compose.AnyPredecessor {
		opts = append(opts, compose.WithMaxRunSteps(n+10))
	}
	return g.Compile(ctx, opts...)
}

// median runs invoke warm times untimed, then runs times timed, checks
// every output is want, and returns the median in milliseconds.
func median(invoke func() (int, error), want, warm, runs int) (float64, error) {
	times := make([]float64, 0, runs)
	for i := range warm + runs {
		start := time.Now()
		got, err := invoke()
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if got != want {
			return 0, fmt.Errorf("output %d, want %d", got, want)
		}
		if i >= warm {
			times = append(times, float64(d.Nanoseconds())/1e6)
		}
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "eino: "+format+"\n", a...)
	os.Exit(1)
}
