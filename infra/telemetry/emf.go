package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/engine"
)

// DefaultNamespace is the CloudWatch namespace of the runner's metrics.
const DefaultNamespace = "WorkflowRunner"

// Metrics writes one Embedded Metric Format line per execution: CloudWatch
// Logs extracts DurationMs, Nodes, InputTokens, OutputTokens, ModelCalls,
// ToolCalls and HTTPRequests under the namespace, by Status. The
// execution and request ids ride along as plain properties, searchable in
// Logs Insights but no dimensions: one metric series per id would be
// unbounded cardinality.
type Metrics struct {
	// Namespace overrides DefaultNamespace.
	Namespace string
	// Now stamps each line; time.Now when nil.
	Now func() time.Time

	mu sync.Mutex // one line per Write, never interleaved
	w  io.Writer
}

// NewMetrics returns Metrics writing to w (stdout under Lambda: EMF is read
// from the function's log stream).
func NewMetrics(w io.Writer) *Metrics { return &Metrics{w: w} }

// emfMetrics are the metric definitions, in the order of the properties.
var emfMetrics = []emfMetric{
	{"DurationMs", "Milliseconds"},
	{"Nodes", "Count"},
	{"InputTokens", "Count"},
	{"OutputTokens", "Count"},
	{"ModelCalls", "Count"},
	{"ToolCalls", "Count"},
	{"HTTPRequests", "Count"},
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

// emfLine is one execution's record; the field order is the line's.
type emfLine struct {
	AWS          emfMeta `json:"_aws"`
	Status       string  `json:"Status"`
	DurationMs   float64 `json:"DurationMs"`
	Nodes        int64   `json:"Nodes"`
	InputTokens  int64   `json:"InputTokens"`
	OutputTokens int64   `json:"OutputTokens"`
	ModelCalls   int64   `json:"ModelCalls"`
	ToolCalls    int64   `json:"ToolCalls"`
	HTTPRequests int64   `json:"HTTPRequests"`
	ExecutionID  string  `json:"executionId"`
	RequestID    string  `json:"requestId,omitempty"`
}

// OnExecution writes s as one EMF line; ctx supplies the Lambda request id.
// Its signature is functions.Handler's OnExecution hook. A failed write is
// dropped: metrics never fail an execution.
func (m *Metrics) OnExecution(ctx context.Context, s engine.Summary) {
	b, err := m.line(ctx, s)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(b)
}

// line encodes s, newline included.
func (m *Metrics) line(ctx context.Context, s engine.Summary) ([]byte, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	ns := m.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	status := s.Status
	if status == "" {
		// An empty dimension value is dropped by CloudWatch with the whole
		// line; name it instead.
		status = "unknown"
	}
	l := emfLine{
		AWS: emfMeta{
			Timestamp: now().UnixMilli(),
			CloudWatchMetrics: []emfDirective{{
				Namespace:  ns,
				Dimensions: [][]string{{"Status"}},
				Metrics:    emfMetrics,
			}},
		},
		Status: status,
		// Microsecond resolution: most set-only executions take well
		// under a millisecond, which a whole number would show as 0.
		DurationMs:   float64(s.Duration.Microseconds()) / 1000,
		Nodes:        s.Nodes,
		InputTokens:  s.Usage.InputTokens,
		OutputTokens: s.Usage.OutputTokens,
		ModelCalls:   s.Usage.ModelCalls,
		ToolCalls:    s.Usage.ToolCalls,
		HTTPRequests: s.Usage.HTTPRequests,
		ExecutionID:  s.ExecutionID,
		RequestID:    requestID(ctx),
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
