package protocol

import (
	"encoding/json"
	"time"
)

// Event types.
const (
	TypeAccepted           = "accepted"
	TypeNodeStarted        = "node.started"
	TypeNodeCompleted      = "node.completed"
	TypeNodeFailed         = "node.failed"
	TypeNodeSuspended      = "node.suspended"
	TypePermissionDecision = "permission.decision"
	TypeResult             = "result"
	TypeError              = "error"
)

// Header is the part every event shares. The Writer fills it in; callers
// leave it zero.
type Header struct {
	Version     int    `json:"version"`
	Type        string `json:"type"`
	ExecutionID string `json:"executionId"`
	At          string `json:"at"`
	// Time, when set, is when the event happened, for its "at": an
	// emitter that has just read the clock (a node's attempt, for its
	// duration) saves the Writer reading it again. The Writer reads its
	// clock otherwise. Either way no line's "at" is earlier than the one's
	// before it.
	Time time.Time `json:"-"`
}

func (h *Header) header() *Header { return h }

// Event is a non-terminal event. Only this package's types implement it.
type Event interface {
	header() *Header
	eventType() string
}

// Terminal is an event that ends the stream: Result or Error.
type Terminal interface {
	Event
	terminal()
}

// Accepted is the first event: the handoff boundary.
type Accepted struct {
	Header
}

// NodeStarted reports an attempt of a node starting. Input is set only when
// the request asked for a trace.
type NodeStarted struct {
	Header
	NodeID   string `json:"nodeId"`
	NodeType string `json:"nodeType"`
	Attempt  int    `json:"attempt"`
	// Role is set on a model or agent node's attempt whose model role is
	// not in the execution's model table and which uses general instead.
	Role  *RoleFallback   `json:"role,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// RoleFallback names the model role a node asked for and the role it uses.
type RoleFallback struct {
	Requested string `json:"requested"`
	Used      string `json:"used"`
}

// NodeCompleted reports a node's success. Output is set only when traced.
type NodeCompleted struct {
	Header
	NodeID     string          `json:"nodeId"`
	NodeType   string          `json:"nodeType"`
	Attempt    int             `json:"attempt"`
	DurationMs int64           `json:"durationMs"`
	Output     json.RawMessage `json:"output,omitempty"`
	// Logs are a code node's console.log lines (an array of strings),
	// set only when traced.
	Logs json.RawMessage `json:"logs,omitempty"`
	// QueuedMs is how long a code node's attempt waited for a sandbox
	// worker before its code started (not part of its timeoutMs), set
	// only when traced and at least a millisecond.
	QueuedMs int64 `json:"queuedMs,omitempty"`
}

// NodeFailed reports a failed attempt; Retrying says whether another attempt
// follows.
type NodeFailed struct {
	Header
	NodeID     string    `json:"nodeId"`
	NodeType   string    `json:"nodeType"`
	Attempt    int       `json:"attempt"`
	DurationMs int64     `json:"durationMs"`
	Error      NodeError `json:"error"`
	Retrying   bool      `json:"retrying"`
	// Logs and QueuedMs are as in NodeCompleted.
	Logs     json.RawMessage `json:"logs,omitempty"`
	QueuedMs int64           `json:"queuedMs,omitempty"`
}

// NodeError is a node's failure: a code for programs, a message for people.
type NodeError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// NodeSuspended reports a node waiting for consent.
type NodeSuspended struct {
	Header
	NodeID   string         `json:"nodeId"`
	NodeType string         `json:"nodeType"`
	Reason   string         `json:"reason"`
	Request  ConsentRequest `json:"request"`
}

// ConsentRequest names the action awaiting consent.
type ConsentRequest struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

// PermissionDecision audits one permission decision, emitted before the
// action it governs.
type PermissionDecision struct {
	Header
	NodeID   string `json:"nodeId"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
	Decision string `json:"decision"`
	Source   string `json:"source"`
	Reason   string `json:"reason"`
}

// Result is the terminal event of an execution that completed or suspended.
type Result struct {
	Header
	Status     ExecutionStatus `json:"status"`
	Output     json.RawMessage `json:"output"`
	Usage      Usage           `json:"usage"`
	DurationMs int64           `json:"durationMs"`
	Suspended  []Suspension    `json:"suspended,omitempty"`
}

// Usage sums what an execution consumed.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	ModelCalls   int64 `json:"modelCalls"`
	ToolCalls    int64 `json:"toolCalls"`
	HTTPRequests int64 `json:"httpRequests"`
}

// Suspension is one request awaiting consent in a suspended result.
type Suspension struct {
	NodeID   string `json:"nodeId"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

// Error is the terminal event of an execution that failed after acceptance.
type Error struct {
	Header
	Error ExecutionError `json:"error"`
}

// ExecutionError is the body of the terminal error event; Code is always
// EXECUTION_FAILED and NodeID names the node at fault, if one is.
type ExecutionError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	NodeID  string `json:"nodeId,omitempty"`
}

func (*Accepted) eventType() string           { return TypeAccepted }
func (*NodeStarted) eventType() string        { return TypeNodeStarted }
func (*NodeCompleted) eventType() string      { return TypeNodeCompleted }
func (*NodeFailed) eventType() string         { return TypeNodeFailed }
func (*NodeSuspended) eventType() string      { return TypeNodeSuspended }
func (*PermissionDecision) eventType() string { return TypePermissionDecision }
func (*Result) eventType() string             { return TypeResult }
func (*Error) eventType() string              { return TypeError }

func (*Result) terminal() {}
func (*Error) terminal()  {}

// NewEvent returns a new zero event of the type named typ, for a reader
// to decode a line into once it has read the line's type, or nil when typ
// names no event type.
func NewEvent(typ string) Event {
	switch typ {
	case TypeAccepted:
		return &Accepted{}
	case TypeNodeStarted:
		return &NodeStarted{}
	case TypeNodeCompleted:
		return &NodeCompleted{}
	case TypeNodeFailed:
		return &NodeFailed{}
	case TypeNodeSuspended:
		return &NodeSuspended{}
	case TypePermissionDecision:
		return &PermissionDecision{}
	case TypeResult:
		return &Result{}
	case TypeError:
		return &Error{}
	}
	return nil
}
