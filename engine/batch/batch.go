// Package batch is the wire between a distributed map and its child
// invocations: the event that carries one batch of the map's items to a
// child (Event, Doc), the lines the child streams back besides the
// iterations' events (End, the private Learned line), their encoding and
// decoding, the cutting of the items into batches that fit one event
// (Pack), and the writer of the child's stream (Writer).
//
// It holds the format and its mechanics only: how the parent sends the
// batches and forwards, counts and redacts a child's events is
// engine/distribute's, what a batch runs the engine's (engine/batch.go is
// the child's side, Engine.ServeBatch). It imports the standard library,
// protocol and engine/secrets, never engine.
package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// EventField is the one member of a batch's event: a Lambda event with it
// is a batch, which no function URL or API Gateway event can be (their
// shapes are AWS's, and a request's body arrives inside them as a string).
const EventField = "runnerFanOutBatch"

// Version is the version of the event (Doc.Version) this runner writes and
// reads.
const Version = 1

// EndType is the type of a child's end line (End).
const EndType = "batch.end"

// LearnedType is the type of the private line of a child's stream that
// reports values its redactor learned (LearnedLine). It is never emitted
// to the parent's sink.
const LearnedType = "batch.learned"

// MaxPayloadBytes bounds the event of one child invocation: Lambda's
// invoke payload limit (6 MB) less room for the request's own framing.
const MaxPayloadBytes = 6<<20 - 64<<10

// TailBytes is room for a batch's own fields but its items and what it
// learned: start, maxNodes and the syntax around them.
const TailBytes = 128

// ErrNotBatch is returned for an event that is not a batch.
var ErrNotBatch = errors.New("not a batch event")

// Event is the event of a child invocation.
type Event struct {
	Batch *Doc `json:"runnerFanOutBatch"`
}

// Doc is what a child needs to run its items as the parent would: the
// request itself (workflow, input, runtime, permissions, grants), the map's
// node, the items with the index of the first, the outer nodes' states, the
// map's concurrency, the parent's deadline and the batch's share of maxNodes.
type Doc struct {
	Version     int               `json:"v"`
	ExecutionID string            `json:"executionId"`
	Request     json.RawMessage   `json:"request"`
	Node        string            `json:"node"`
	Start       int               `json:"start,omitempty"`
	Items       []json.RawMessage `json:"items,omitempty"` // the parent writes them (AppendHead)
	Concurrency int               `json:"concurrency"`
	Scope       map[string]State  `json:"scope,omitempty"`
	DeadlineMs  int64             `json:"deadlineMs"`
	// NodeDeadlineMs, when set, is the map's own timeoutMs's end, before
	// the execution's: its iterations then fail TIMEOUT.
	NodeDeadlineMs int64 `json:"nodeDeadlineMs,omitempty"`
	// MaxNodes is the most nodes the batch may start: its share of what
	// remained of the execution's maxNodes when it was sent
	// (engine/distribute/count.go).
	MaxNodes int64 `json:"maxNodes,omitempty"`
	// Learned is what the parent's redactor had learned (values built from
	// secrets) when it sent the batch, which the child knows before it
	// runs anything; LearnCaps, the totals the child's may reach: that
	// plus the batch's share of the execution's bounds (engine/secrets/share.go).
	Learned   *secrets.Learned `json:"learned,omitempty"`
	LearnCaps *secrets.Caps    `json:"learnCaps,omitempty"`
}

// State is an outer node's state as a batch carries it.
type State struct {
	Status protocol.NodeStatus `json:"status"`
	Output json.RawMessage     `json:"output,omitempty"`
	Error  *protocol.NodeError `json:"error,omitempty"`
}

// End is the last line of a child's stream.
type End struct {
	Type      string                `json:"type"`
	Outputs   []json.RawMessage     `json:"outputs,omitempty"`
	Usage     protocol.Usage        `json:"usage"`
	Failure   *Failure              `json:"failure,omitempty"`
	Suspended []protocol.Suspension `json:"suspended,omitempty"`
	// Nodes is how many nodes the batch started, at most its MaxNodes.
	Nodes int64 `json:"nodes"`
	// Learned is everything the child's redactor learned beyond what the
	// parent sent, each value already reported on a private line.
	Learned *secrets.Learned `json:"learned,omitempty"`
}

// Failure is the failure that ended a batch, as the parent's map fails
// with it.
type Failure struct {
	NodeID  string        `json:"nodeId"`
	Code    protocol.Code `json:"code"`
	Message string        `json:"message"`
}

// LearnedLine is the private line of a child's stream (LearnedType).
type LearnedLine struct {
	Type string `json:"type"`
	secrets.Learned
}

// Decode reads a child's event: ErrNotBatch when it is not a batch, an
// error naming what is wrong when it is one this runner cannot run.
func Decode(event []byte) (*Doc, error) {
	var ev Event
	if err := json.Unmarshal(event, &ev); err != nil || ev.Batch == nil {
		return nil, ErrNotBatch
	}
	b := ev.Batch
	if b.Version != Version {
		return nil, fmt.Errorf("batch event version %d, want %d", b.Version, Version)
	}
	if b.MaxNodes < 1 {
		return nil, fmt.Errorf("batch event maxNodes %d, want at least 1", b.MaxNodes)
	}
	return b, nil
}

// Deadline is the deadline a child runs to, from Doc.DeadlineMs: the
// parent's execution deadline, so that the parent still has its reserve
// to end the stream.
func Deadline(ms int64) time.Time { return time.UnixMilli(ms) }

// EncodeEnd is the end line, HTML escaping off: the outputs in it were
// written without, and escaping them again as they are copied would make
// each < six bytes of a line the parent bounds.
func EncodeEnd(end *End) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(end)
	return buf.Bytes(), err
}

// IsEndLine tells a child's end line from its events, which the child
// writes with the type first.
func IsEndLine(line []byte) bool {
	return bytes.Contains(line[:min(len(line), 64)], []byte(`"type":"`+EndType+`"`))
}

// DecodeEnd reads a child's end line.
func DecodeEnd(line []byte) (*End, error) {
	var end End
	if err := json.Unmarshal(line, &end); err != nil {
		return nil, err
	}
	return &end, nil
}

// DecodeLearned reads a child's private line (LearnedType).
func DecodeLearned(line []byte) (secrets.Learned, error) {
	var l LearnedLine
	err := json.Unmarshal(line, &l)
	return l.Learned, err
}
