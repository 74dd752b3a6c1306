// Package distribute is the parent's side of a distributed map
// (with.distribute): it sends a map's batches to child invocations of
// this function, at most so many at once, each with its share of the
// execution's maxNodes and of what its redactor may learn, forwards the
// children's events into the parent's stream, checked and redacted
// again, and returns their outputs in item order.
//
// The engine plans the batches (the map's items sized and packed, the
// outer nodes' states, the event's head: engine/distribute.go) and runs
// the child's side (Engine.ServeBatch); what only it can do for a batch
// it does through Execution. The event and the lines are engine/batch's.
// It imports the standard library, protocol, engine/batch,
// engine/secrets, engine/lang and engine/jsonweight, never engine.
package distribute

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// FanOut starts child invocations of this function for the batches of a
// distributed map. engine/fanout's Client is one (Lambda's
// InvokeWithResponseStream).
type FanOut interface {
	// Invoke runs one child invocation whose event is payload (what
	// Engine.ServeBatch reads) and returns its response stream as it is
	// produced. The caller closes it; cancelling ctx ends the invocation's
	// stream. An invocation that is throttled is retried until ctx ends.
	Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error)
}

// Execution is what a batch needs of the execution its map runs in that
// only the engine can do: encode the batch's event at the one place an
// author value's bytes are charged, take in what the batch's end reports,
// and say when the execution is suspending.
type Execution interface {
	// Event encodes a batch's event: the common part, the batch's own
	// fields (doc) and its items, charged to the memory budget until
	// release is called. what names the batch in errors.
	Event(ctx context.Context, what string, doc *batch.Doc, items Items) (event []byte, release func(), err error)
	// Ended takes in what a batch's end line reports: its usage, and the
	// suspension or the failure that ends the map, returned as the error
	// the map fails with.
	Ended(end *batch.End) error
	// Suspending returns the error that ends the map when the execution
	// waits for a consent, nil when it does not: no batch is sent after it.
	Suspending() error
	// NodeFailed counts a child's final node failure in the execution's
	// metrics, as the execution counts its own.
	NodeFailed(nodeType, code string)
}

// Sink receives the children's events, as the execution's own; the
// engine's Sink is one.
type Sink interface {
	Emit(protocol.Event) error
}

// Parent is the execution a distributed map runs in, as its batches reach
// it: what they share with everything else it runs.
type Parent struct {
	// Exec is what only the engine can do for a batch.
	Exec Execution
	// Sink is the execution's: a child's events are emitted there, so that
	// the parent's bounds and redaction apply to them again.
	Sink Sink
	// Redact is the execution's redactor. Learns says the request carries
	// secrets: each batch is then lent what the redactor has learned and a
	// share of what it may still learn, and the redactor takes in what the
	// batch learned.
	Redact *secrets.Scrubber
	Learns bool
	// Nodes counts the node instances the execution has started, against
	// MaxNodes; Budget the bytes it holds, against MemoryBudget. A batch
	// reserves its share of Nodes as it is sent (count.go), and charges to
	// Budget what it holds of a child's stream and outputs.
	Nodes, Budget *atomic.Int64
	MaxNodes      int
	MemoryBudget  int64
	// MaxEventBytes bounds one event of a child's stream, as the child's
	// own writer does.
	MaxEventBytes int
	// Slots bound the child invocations of all the execution's distributed
	// maps together, at maxFanOutInvocations: maps side by side do not
	// multiply it.
	Slots chan struct{}
}

// Batches are one map's items cut into batches, ready to send.
type Batches struct {
	FanOut FanOut
	// Head is the event's fields but a batch's own (Start, MaxNodes,
	// Learned, LearnCaps), and Common its encoding (batch.EncodeHead),
	// made once for every batch.
	Head   batch.Doc
	Common []byte
	// Spans cut Items into batches that fit one event each (batch.Pack).
	Items []any
	Spans []batch.Span
	// Invocations bounds this map's batches running at once.
	Invocations int
	// PerItem is the most nodes one iteration can start, 0 when unknown
	// before it runs (a composite node in it).
	PerItem int64
	// Prefix starts the id of every node a child may report: the map's
	// id and "[".
	Prefix string
}

// Items are a batch's items, to be encoded into its event: Common is the
// event's encoding without the batch's own fields (batch.EncodeHead), Size
// the items' JSON with their commas.
type Items struct {
	Common []byte
	Items  []any
	Size   int64
}

// sending is what Run shares with its batches' goroutines: the first
// failure is kept and cancels the others.
type sending struct {
	ctx      context.Context // the batches', cancelled on the first failure
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	first    error // under mu
	inFlight int   // under mu: batches sent that have not ended
	// freed is signalled when a batch ends, giving back what it did not
	// use of its share of maxNodes.
	freed chan struct{}
}

// failLocked records err as the map's failure if it is the first, and
// cancels the batches still running; the caller holds s.mu.
func (s *sending) failLocked(err error) {
	if s.first == nil {
		s.first = err
	}
	s.cancel()
}

// Run sends b's batches, at most b.Invocations at once and the
// execution's Slots together, and returns their outputs in item order,
// failing as the in-process map would. Each batch is sent with its
// allowance of maxNodes reserved (count.go); one that finds too little
// left waits for this map's batches in flight to give back what they did
// not use.
func (p *Parent) Run(ctx context.Context, b *Batches) ([]any, error) {
	s := &sending{freed: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer s.cancel()
	ctx = s.ctx
	out := make([]any, len(b.Items))
	slots, all := make(chan struct{}, b.Invocations), p.Slots
	remaining := int64(len(b.Items))
loop:
	for k, span := range b.Spans {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		select {
		case all <- struct{}{}:
		case <-ctx.Done():
			<-slots
			break loop
		}
		if p.Exec.Suspending() != nil || ctx.Err() != nil {
			<-all
			<-slots
			break
		}
		count := &nodeCount{items: int64(span.N)}
		for {
			s.mu.Lock()
			busy := s.inFlight
			s.mu.Unlock()
			if count.allowance = p.reserve(count.items, remaining, b.PerItem); count.allowance > 0 {
				break
			}
			if busy == 0 {
				s.mu.Lock()
				if s.first == nil {
					s.first = errorf(protocol.CodeLimitExceeded, "execution ran more than maxNodes (%d) nodes: the batch of items %d to %d counts one an item at least, over what remains", p.MaxNodes, span.Start, span.Start+span.N-1)
				}
				s.mu.Unlock()
				<-all
				<-slots
				break loop
			}
			select {
			case <-s.freed:
			case <-ctx.Done():
				<-all
				<-slots
				break loop
			}
		}
		remaining -= count.items
		doc := b.Head
		doc.Start = span.Start
		doc.MaxNodes = count.allowance
		items := Items{Common: b.Common, Items: b.Items[span.Start : span.Start+span.N], Size: span.Size}
		s.mu.Lock()
		s.inFlight++
		s.mu.Unlock()
		var share *secrets.Share // the share lent, until the batch ends
		if p.Learns {
			doc.Learned, doc.LearnCaps, share = p.Redact.Lend(learnSlots(slots, all, len(b.Spans)-k))
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-all; <-slots }()
			vals, err := p.send(ctx, b, &doc, share, items, count)
			p.settle(count)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inFlight--
			select {
			case s.freed <- struct{}{}:
			default:
			}
			if err != nil {
				// Under the lock that counts the batch out of inFlight:
				// the loop, finding no batch in flight, finds this
				// failure kept and does not put maxNodes' in its place.
				s.failLocked(err)
				return
			}
			copy(out[doc.Start:], vals)
		}()
	}
	s.wg.Wait()
	if s.first != nil {
		return nil, s.first
	}
	if err := p.Exec.Suspending(); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return out, nil
}

// learnSlots is how many batches may share what is left of the bounds when
// one is sent: it and the free slots of its map and of the execution, and
// no more than the map's batches not yet sent (left, this one included).
func learnSlots(slots, all chan struct{}, left int) int {
	return max(1, min(cap(slots)-len(slots), cap(all)-len(all), left-1)+1)
}
