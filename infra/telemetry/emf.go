package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// DefaultNamespace is the CloudWatch namespace of the runner's metrics.
// Stacks share it; the FunctionName dimension keeps them apart.
const DefaultNamespace = "WorkflowRunner"

// Metric and dimension names, as the template's alarms and dashboard use
// them.
const (
	DimFunctionName = "FunctionName"
	DimStatus       = "Status"
	DimStatusCode   = "StatusCode"
	DimNodeType     = "NodeType"
	DimCode         = "Code"
	// DimExecutedVersion is the function version that ran, named as
	// Lambda's own metrics name it, so that a deployment's canary alarms
	// judge the new version alone.
	DimExecutedVersion = "ExecutedVersion"

	MetricExecutions           = "Executions"
	MetricDuration             = "DurationMs"
	MetricTimeToAccepted       = "TimeToAcceptedMs"
	MetricDeadlineExceeded     = "DeadlineExceeded"
	MetricMemoryBudgetExceeded = "MemoryBudgetExceeded"
	MetricNodeFailures         = "NodeFailures"
	MetricResponses            = "Responses"
)

// Metrics writes CloudWatch Embedded Metric Format lines: one per
// execution (counts by status, duration, time to accepted, usage, deadline
// and memory-budget endings), one per node type and code that failed in
// it, and one per refused request (by HTTP status). Every line has the
// FunctionName dimension, so that two stacks in one account keep their
// metrics apart. Execution and request ids ride along as plain properties,
// searchable in Logs Insights but no dimensions: one series per id would be
// unbounded cardinality.
type Metrics struct {
	// Namespace overrides DefaultNamespace.
	Namespace string
	// FunctionName is the FunctionName dimension's value; "local" if empty.
	FunctionName string
	// Version is the function version running (AWS_LAMBDA_FUNCTION_VERSION).
	// When set, execution and response lines are also counted by
	// FunctionName, ExecutedVersion and their status.
	Version string
	// Now stamps each line; time.Now when nil.
	Now func() time.Time

	mu sync.Mutex // one line per Write, never interleaved
	w  io.Writer
}

// NewMetrics returns Metrics writing to w (stdout under Lambda: EMF is read
// from the function's log stream).
func NewMetrics(w io.Writer, functionName string) *Metrics {
	return &Metrics{w: w, FunctionName: functionName}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// executionMetrics are the execution line's metric definitions.
var executionMetrics = []emfMetric{
	{MetricExecutions, "Count"},
	{MetricDuration, "Milliseconds"},
	{MetricTimeToAccepted, "Milliseconds"},
	{"Nodes", "Count"},
	{"InputTokens", "Count"},
	{"OutputTokens", "Count"},
	{"ModelCalls", "Count"},
	{"ToolCalls", "Count"},
	{"HTTPRequests", "Count"},
	{MetricDeadlineExceeded, "Count"},
	{MetricMemoryBudgetExceeded, "Count"},
}

// executionLine is one execution's record; the field order is the line's.
type executionLine struct {
	AWS                  emfMeta `json:"_aws"`
	FunctionName         string  `json:"FunctionName"`
	ExecutedVersion      string  `json:"ExecutedVersion,omitempty"`
	Status               string  `json:"Status"`
	Executions           int64   `json:"Executions"`
	DurationMs           float64 `json:"DurationMs"`
	TimeToAcceptedMs     float64 `json:"TimeToAcceptedMs"`
	Nodes                int64   `json:"Nodes"`
	InputTokens          int64   `json:"InputTokens"`
	OutputTokens         int64   `json:"OutputTokens"`
	ModelCalls           int64   `json:"ModelCalls"`
	ToolCalls            int64   `json:"ToolCalls"`
	HTTPRequests         int64   `json:"HTTPRequests"`
	DeadlineExceeded     int64   `json:"DeadlineExceeded"`
	MemoryBudgetExceeded int64   `json:"MemoryBudgetExceeded"`
	Code                 string  `json:"code,omitempty"`
	ExecutionID          string  `json:"executionId"`
	RequestID            string  `json:"requestId,omitempty"`
}

type nodeFailureLine struct {
	AWS          emfMeta `json:"_aws"`
	FunctionName string  `json:"FunctionName"`
	NodeType     string  `json:"NodeType"`
	Code         string  `json:"Code"`
	NodeFailures int64   `json:"NodeFailures"`
	ExecutionID  string  `json:"executionId"`
	RequestID    string  `json:"requestId,omitempty"`
}

type responseLine struct {
	AWS             emfMeta `json:"_aws"`
	FunctionName    string  `json:"FunctionName"`
	ExecutedVersion string  `json:"ExecutedVersion,omitempty"`
	StatusCode      string  `json:"StatusCode"`
	Responses       int64   `json:"Responses"`
	RequestID       string  `json:"requestId,omitempty"`
}

// OnExecution writes s as EMF lines; ctx supplies the Lambda request id.
// Its signature is functions.Handler's OnExecution hook. A failed write is
// dropped: metrics never fail an execution.
func (m *Metrics) OnExecution(ctx context.Context, s protocol.Summary) {
	now, fn, rid := m.now(), m.functionName(), requestID(ctx)
	status := s.Status
	if status == "" {
		// An empty dimension value is dropped by CloudWatch with the whole
		// line; name it instead.
		status = "unknown"
	}
	l := executionLine{
		AWS:             m.meta(now, executionMetrics, m.byVersion([]string{DimFunctionName, DimStatus}, []string{DimFunctionName}, []string{DimFunctionName, DimExecutedVersion, DimStatus})...),
		FunctionName:    fn,
		ExecutedVersion: m.Version,
		Status:          string(status),
		Executions:      1,
		// Microsecond resolution: most set-only executions take well
		// under a millisecond, which a whole number would show as 0.
		DurationMs:       ms(s.Duration),
		TimeToAcceptedMs: ms(s.Accepted),
		Nodes:            s.Nodes,
		InputTokens:      s.Usage.InputTokens,
		OutputTokens:     s.Usage.OutputTokens,
		ModelCalls:       s.Usage.ModelCalls,
		ToolCalls:        s.Usage.ToolCalls,
		HTTPRequests:     s.Usage.HTTPRequests,
		Code:             string(s.Code),
		ExecutionID:      s.ExecutionID,
		RequestID:        rid,
	}
	switch s.Code {
	case protocol.CodeDeadlineExceeded:
		l.DeadlineExceeded = 1
	case protocol.CodeMemoryBudgetExceeded:
		l.MemoryBudgetExceeded = 1
	}
	lines := []any{l}
	for _, f := range s.Failures {
		lines = append(lines, nodeFailureLine{
			AWS:          m.meta(now, []emfMetric{{MetricNodeFailures, "Count"}}, []string{DimFunctionName, DimNodeType, DimCode}),
			FunctionName: fn, NodeType: f.NodeType, Code: string(f.Code), NodeFailures: f.Count,
			ExecutionID: s.ExecutionID, RequestID: rid,
		})
	}
	m.write(lines...)
}

// OnResponse writes one line counting a refused request by its HTTP
// status (400, 401, 503, ...). Its signature is functions.Handler's
// OnResponse hook.
func (m *Metrics) OnResponse(ctx context.Context, status int) {
	m.write(responseLine{
		AWS:             m.meta(m.now(), []emfMetric{{MetricResponses, "Count"}}, m.byVersion([]string{DimFunctionName, DimStatusCode}, []string{DimFunctionName, DimExecutedVersion, DimStatusCode})...),
		FunctionName:    m.functionName(),
		ExecutedVersion: m.Version,
		StatusCode:      strconv.Itoa(status),
		Responses:       1,
		RequestID:       requestID(ctx),
	})
}

func (m *Metrics) write(lines ...any) {
	var buf []byte
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			continue
		}
		buf = append(append(buf, b...), '\n')
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(buf)
}

func (m *Metrics) meta(now time.Time, metrics []emfMetric, dims ...[]string) emfMeta {
	ns := m.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	return emfMeta{Timestamp: now.UnixMilli(), CloudWatchMetrics: []emfDirective{{Namespace: ns, Dimensions: dims, Metrics: metrics}}}
}

// byVersion returns the dimension sets, the last one (by version) only
// when the version is known.
func (m *Metrics) byVersion(dims ...[]string) [][]string {
	if m.Version == "" {
		return dims[:len(dims)-1]
	}
	return dims
}

func (m *Metrics) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Metrics) functionName() string {
	if m.FunctionName == "" {
		return "local"
	}
	return m.FunctionName
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
