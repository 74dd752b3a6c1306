package protocol

import "time"

// Summary is how an execution ended, as logs, metrics and traces are told:
// ids, a status, codes and counts, never a value. It lives here, below both
// the engine that fills it and the telemetry that reports it.
type Summary struct {
	ExecutionID string
	Status      ExecutionStatus
	// Code is why a failed execution ended: the code of the node failure
	// that ended it, DEADLINE_EXCEEDED when it ran out of time, else
	// EXECUTION_FAILED. Empty unless Status is failed.
	Code     Code
	Nodes    int64
	Duration time.Duration
	// Accepted is the time from the request's arrival to the accepted
	// event; the handler sets it, the engine never sees the request.
	Accepted time.Duration
	Usage    Usage
	// Failures counts node failures that were not retried, by node type
	// and code.
	Failures []NodeFailures
}

// NodeFailures is a count of final node failures of one type and code.
type NodeFailures struct {
	NodeType string
	Code     Code
	Count    int64
}
