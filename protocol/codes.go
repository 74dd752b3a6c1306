package protocol

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Code is an error code: of an error body (before acceptance), of the
// terminal error event (after it) or of a node's failure (node.failed and
// nodes.<id>.error). Programs branch on it; the message is for people.
type Code string

// Error codes of error bodies (before acceptance) and of the terminal error
// event (after acceptance).
const (
	CodeUnauthorized     Code = "UNAUTHORIZED"
	CodeInvalidExecution Code = "INVALID_EXECUTION"
	CodeNotFound         Code = "NOT_FOUND"
	CodeMethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	CodeUnavailable      Code = "UNAVAILABLE"
	CodeInternal         Code = "INTERNAL"
	CodeExecutionFailed  Code = "EXECUTION_FAILED"
)

// Node error codes, carried by node.failed and by nodes.<id>.error.
const (
	CodeFailed               Code = "FAILED"
	CodeExpressionError      Code = "EXPRESSION_ERROR"
	CodeTimeout              Code = "TIMEOUT"
	CodeDeadlineExceeded     Code = "DEADLINE_EXCEEDED"
	CodeCancelled            Code = "CANCELLED"
	CodePermissionDenied     Code = "PERMISSION_DENIED"
	CodeModelError           Code = "MODEL_ERROR"
	CodeToolError            Code = "TOOL_ERROR"
	CodeHTTPBlocked          Code = "HTTP_BLOCKED"
	CodeHTTPError            Code = "HTTP_ERROR"
	CodeOutputTooLarge       Code = "OUTPUT_TOO_LARGE"
	CodeMemoryBudgetExceeded Code = "MEMORY_BUDGET_EXCEEDED"
	CodeLimitExceeded        Code = "LIMIT_EXCEEDED"
	// CodeInvocationFailed fails the items of a distributed map's batch
	// whose child invocation could not run or ended without its result.
	CodeInvocationFailed Code = "INVOCATION_FAILED"
	// CodeCodeError is a code node's JavaScript throwing (or not
	// compiling, or returning what JSON cannot hold).
	CodeCodeError Code = "CODE_ERROR"
)

// HTTPStatus is the status of a response whose error body carries code c.
// It is the one place statuses are chosen: the handler and the Lambda
// adapter both ask it. A code that only appears in events (node codes,
// EXECUTION_FAILED) has no response of its own and maps to 500, as does an
// unknown code.
func HTTPStatus(c Code) int {
	switch c {
	case CodeInvalidExecution:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeNotFound:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// BodyTooLarge is the response to a request body over limit bytes: the
// one INVALID_EXECUTION answered with 413 rather than 400, because the body
// was never read to the end and so never checked.
func BodyTooLarge(limit int64) (status int, body ErrorResponse) {
	return http.StatusRequestEntityTooLarge,
		NewErrorResponse(CodeInvalidExecution, "request body exceeds "+strconv.FormatInt(limit, 10)+" bytes")
}

// BodyTooSlow is the response to a request body not received within
// timeout: INVALID_EXECUTION with 408, the body having never arrived.
func BodyTooSlow(timeout time.Duration) (status int, body ErrorResponse) {
	return http.StatusRequestTimeout,
		NewErrorResponse(CodeInvalidExecution, fmt.Sprintf("request body not received within %v", timeout))
}

// ExecutionStatus is how an execution ended: the status of a result event
// (completed or suspended), or failed when it ended with an error event.
type ExecutionStatus string

// Execution statuses.
const (
	StatusCompleted ExecutionStatus = "completed"
	StatusSuspended ExecutionStatus = "suspended"
	// StatusFailed never appears in a result event (a failed execution
	// ends with an error event); it names that ending in summaries and
	// logs.
	StatusFailed ExecutionStatus = "failed"
)

// NodeStatus is a node's state as expressions see it in nodes.<id>.status.
type NodeStatus string

// Node statuses. A node that has not run (yet) has the zero status.
const (
	NodeStatusCompleted NodeStatus = "completed"
	NodeStatusFailed    NodeStatus = "failed"
	NodeStatusSkipped   NodeStatus = "skipped"
	NodeStatusSuspended NodeStatus = "suspended"
)
