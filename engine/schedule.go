package engine

import (
	"context"

	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the scheduler: it runs a graph's nodes as their needs end,
// each through its gate, within the execution's concurrency.

type result struct {
	i     int
	state nodeState
	fail  *graphFailure
}

// execute runs the graph to its end: every node completed, failed, skipped
// or never started (after a failure or a suspension). It returns a
// *graphFailure for a node failure that ends the graph, or the context's
// error.
func (gr *graphRun) execute(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newScheduler(ctx, cancel, gr)
	for {
		s.admit()
		if s.stopping() {
			s.runnable = nil // start nothing new
		}
		if len(s.runnable) > 0 && trySend(gr.r.sem) {
			// One at a time: an inline node may have ended and made
			// others ready, or failed.
			s.startNext()
			continue
		}
		if s.running == 0 && len(s.runnable) == 0 {
			break
		}
		s.wait()
	}
	if s.failure != nil {
		return s.failure
	}
	return context.Cause(ctx)
}

// scheduler is the state of one execute: the nodes waiting for their needs,
// those ready to pass their gate, and those waiting for a slot.
type scheduler struct {
	gr     *graphRun
	ctx    context.Context
	cancel context.CancelFunc
	// remaining counts, per node, the needs that have not ended yet.
	remaining []int
	ready     []int
	// runnable holds nodes that passed their gate and wait for a slot of
	// the execution's concurrency. They get a goroutine only with a slot:
	// a wide graph would otherwise park one goroutine (and its stack) per
	// node on the semaphore, which is most of the memory of 10,000 nodes.
	runnable []int
	running  int
	done     chan result
	failure  *graphFailure
}

func newScheduler(ctx context.Context, cancel context.CancelFunc, gr *graphRun) *scheduler {
	s := &scheduler{gr: gr, ctx: ctx, cancel: cancel, remaining: make([]int, len(gr.g.nodes)), done: make(chan result)}
	for i, n := range gr.g.nodes {
		s.remaining[i] = len(n.needs)
		if s.remaining[i] == 0 {
			s.ready = append(s.ready, i)
		}
	}
	return s
}

// stopping reports whether the graph starts no more nodes: one failed, the
// context ended or the execution is suspending.
func (s *scheduler) stopping() bool {
	return s.failure != nil || s.ctx.Err() != nil || s.gr.r.suspended.Load()
}

// admit passes the ready nodes through their gate: a skipped or failed
// node ends at once (as finished records any node's end), a composite
// starts (it takes no slot: its inner nodes do), any other node waits for
// a slot.
func (s *scheduler) admit() {
	g := s.gr.g
	for len(s.ready) > 0 && !s.stopping() {
		var i int
		i, s.ready = pop(s.ready)
		if st, skip := s.gr.gate(s.ctx, i); skip {
			var f *graphFailure
			if st.status == protocol.NodeStatusFailed {
				f = &graphFailure{nodeID: s.gr.prefix + g.nodes[i].id, err: st.err}
			}
			s.finished(result{i: i, state: st, fail: f})
			continue
		}
		if g.nodes[i].inner != nil {
			s.start(i)
			continue
		}
		s.runnable = append(s.runnable, i)
	}
}

// ended makes ready the dependents of node i whose needs have all ended.
func (s *scheduler) ended(i int) {
	for _, k := range s.gr.g.nodes[i].dependent {
		if s.remaining[k]--; s.remaining[k] == 0 {
			s.ready = append(s.ready, k)
		}
	}
}

// start runs node i on its own goroutine, which reports on done.
func (s *scheduler) start(i int) {
	s.running++
	go func() {
		st, f := s.gr.runNode(s.ctx, i)
		s.done <- result{i: i, state: st, fail: f}
	}()
}

// finished records a node's end and makes its dependents ready.
func (s *scheduler) finished(res result) {
	s.gr.record(res.i, res.state)
	if res.state.status == protocol.NodeStatusFailed && !s.gr.g.nodes[res.i].continue_ && s.failure == nil {
		s.failure = res.fail
		s.cancel()
	}
	s.ended(res.i)
}

// startNext starts the first runnable node, whose slot is taken: on its
// own goroutine, or at once on this one when it runs inline (inline.go).
func (s *scheduler) startNext() {
	i, rest := pop(s.runnable)
	s.runnable = rest
	if s.gr.g.nodes[i].inline {
		st, f := s.gr.runNode(s.ctx, i)
		s.finished(result{i: i, state: st, fail: f})
		return
	}
	s.start(i)
}

// pop takes the first index off a queue. The queue's last index leaves it
// empty at the start of its array, not past it, so that a queue holding one
// node at a time (a chain) reuses its array instead of growing a new one
// for each node.
func pop(q []int) (int, []int) {
	if len(q) == 1 {
		return q[0], q[:0]
	}
	return q[0], q[1:]
}

// wait waits for a node to end or, when nodes wait for one, for a slot or
// the end of the context.
func (s *scheduler) wait() {
	var slot chan struct{}
	var stop <-chan struct{}
	if len(s.runnable) > 0 {
		slot, stop = s.gr.r.sem, s.ctx.Done()
	}
	select {
	case res := <-s.done:
		s.running--
		s.finished(res)
	case slot <- struct{}{}:
		s.startNext()
	case <-stop:
	}
}

// trySend takes a slot of sem if one is free, without waiting.
func trySend(sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
		return false
	}
}
