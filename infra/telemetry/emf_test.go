package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnerd/lambda-runner/infra/telemetry"
	"github.com/runnerd/lambda-runner/protocol"
)

var fixedNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) // 1735689600000 ms

func lambdaCtx(id string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
}

// emfLine is one parsed line: its directive and its top-level properties.
type emfLine struct {
	Namespace  string
	Dimensions [][]string
	Metrics    map[string]string // name -> unit
	Props      map[string]any
}

// parseEMF parses every line of out as CloudWatch does, failing t on any
// line CloudWatch would drop: a malformed directive, a dimension that is
// not a string property or a metric that is not a number property.
func parseEMF(t *testing.T, out string) []emfLine {
	t.Helper()
	var lines []emfLine
	for _, raw := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var props map[string]any
		if err := json.Unmarshal([]byte(raw), &props); err != nil {
			t.Fatalf("not one JSON object: %q", raw)
		}
		var meta struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		}
		b, _ := json.Marshal(props["_aws"])
		if err := json.Unmarshal(b, &meta); err != nil || len(meta.CloudWatchMetrics) != 1 || meta.Timestamp == 0 {
			t.Fatalf("bad _aws directive in %s", raw)
		}
		d := meta.CloudWatchMetrics[0]
		l := emfLine{Namespace: d.Namespace, Dimensions: d.Dimensions, Metrics: map[string]string{}, Props: props}
		for _, set := range d.Dimensions {
			for _, dim := range set {
				if v, ok := props[dim].(string); !ok || v == "" {
					t.Errorf("dimension %s is %v, want a non-empty string property", dim, props[dim])
				}
			}
		}
		for _, m := range d.Metrics {
			if _, ok := props[m.Name].(float64); !ok {
				t.Errorf("metric %s is %T, want a number property", m.Name, props[m.Name])
			}
			l.Metrics[m.Name] = m.Unit
		}
		lines = append(lines, l)
	}
	return lines
}

func TestMetricsExecutionLines(t *testing.T) {
	tests := []struct {
		name      string
		namespace string
		fn        string
		ctx       context.Context
		sum       protocol.Summary
		want      []map[string]any // properties checked per line
		wantDims  [][][]string
	}{
		{
			name: "completed under Lambda",
			fn:   "stack-a-RunnerFunction-1",
			ctx:  lambdaCtx("req-1"),
			sum: protocol.Summary{ExecutionID: "0190-exec", Status: "completed", Nodes: 3,
				Duration: 1500*time.Millisecond + 250*time.Microsecond, Accepted: 2 * time.Millisecond,
				Usage: protocol.Usage{InputTokens: 120, OutputTokens: 45, ModelCalls: 2, ToolCalls: 1, HTTPRequests: 4}},
			want: []map[string]any{{"FunctionName": "stack-a-RunnerFunction-1", "Status": "completed", "Executions": 1.0,
				"DurationMs": 1500.25, "TimeToAcceptedMs": 2.0, "Nodes": 3.0, "InputTokens": 120.0, "HTTPRequests": 4.0,
				"DeadlineExceeded": 0.0, "MemoryBudgetExceeded": 0.0, "executionId": "0190-exec", "requestId": "req-1"}},
			wantDims: [][][]string{{{"FunctionName", "Status"}, {"FunctionName"}}},
		},
		{
			name:      "deadline, node failures, other namespace, no function name",
			namespace: "Staging/Runner",
			ctx:       context.Background(),
			sum: protocol.Summary{ExecutionID: "x", Status: "failed", Code: protocol.CodeDeadlineExceeded, Nodes: 2,
				Failures: []protocol.NodeFailures{{NodeType: "http", Code: "HTTP_ERROR", Count: 2}, {NodeType: "model", Code: "TIMEOUT", Count: 1}}},
			want: []map[string]any{
				{"FunctionName": "local", "Status": "failed", "DeadlineExceeded": 1.0, "MemoryBudgetExceeded": 0.0, "code": "DEADLINE_EXCEEDED"},
				{"FunctionName": "local", "NodeType": "http", "Code": "HTTP_ERROR", "NodeFailures": 2.0, "executionId": "x"},
				{"FunctionName": "local", "NodeType": "model", "Code": "TIMEOUT", "NodeFailures": 1.0},
			},
			wantDims: [][][]string{{{"FunctionName", "Status"}, {"FunctionName"}}, {{"FunctionName", "NodeType", "Code"}}, {{"FunctionName", "NodeType", "Code"}}},
		},
		{
			name:     "memory budget ending, empty status is named",
			fn:       "f",
			ctx:      context.Background(),
			sum:      protocol.Summary{ExecutionID: "y", Code: protocol.CodeMemoryBudgetExceeded},
			want:     []map[string]any{{"Status": "unknown", "MemoryBudgetExceeded": 1.0, "DeadlineExceeded": 0.0}},
			wantDims: [][][]string{{{"FunctionName", "Status"}, {"FunctionName"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := telemetry.NewMetrics(&buf, tt.fn)
			m.Namespace = tt.namespace
			m.Now = func() time.Time { return fixedNow }
			m.OnExecution(tt.ctx, tt.sum)
			lines := parseEMF(t, buf.String())
			if len(lines) != len(tt.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tt.want), buf.String())
			}
			wantNS := tt.namespace
			if wantNS == "" {
				wantNS = telemetry.DefaultNamespace
			}
			for i, l := range lines {
				if l.Namespace != wantNS {
					t.Errorf("line %d namespace %q, want %q", i, l.Namespace, wantNS)
				}
				if !slices.EqualFunc(l.Dimensions, tt.wantDims[i], slices.Equal) {
					t.Errorf("line %d dimensions %v, want %v", i, l.Dimensions, tt.wantDims[i])
				}
				if l.Props["_aws"].(map[string]any)["Timestamp"] != 1735689600000.0 {
					t.Errorf("line %d timestamp %v", i, l.Props["_aws"])
				}
				for k, v := range tt.want[i] {
					if l.Props[k] != v {
						t.Errorf("line %d %s = %v, want %v", i, k, l.Props[k], v)
					}
				}
			}
			if u := lines[0].Metrics; u["Executions"] != "Count" || u["DurationMs"] != "Milliseconds" || u["TimeToAcceptedMs"] != "Milliseconds" {
				t.Errorf("execution metrics %v", u)
			}
		})
	}
}

func TestMetricsResponses(t *testing.T) {
	for _, status := range []int{400, 401, 503} {
		var buf bytes.Buffer
		telemetry.NewMetrics(&buf, "fn").OnResponse(lambdaCtx("r"), status)
		lines := parseEMF(t, buf.String())
		if len(lines) != 1 {
			t.Fatalf("%d lines", len(lines))
		}
		l := lines[0]
		if l.Metrics["Responses"] != "Count" || l.Props["Responses"] != 1.0 || l.Props["FunctionName"] != "fn" ||
			l.Props["StatusCode"] != itoa(status) {
			t.Errorf("status %d: line %v", status, l.Props)
		}
		if !slices.EqualFunc(l.Dimensions, [][]string{{"FunctionName", "StatusCode"}}, slices.Equal) {
			t.Errorf("dimensions %v", l.Dimensions)
		}
	}
}

// Under Lambda the version that ran is a dimension too, so that canary
// alarms (template.yaml) judge the new version alone.
func TestMetricsByVersion(t *testing.T) {
	var buf bytes.Buffer
	m := telemetry.NewMetrics(&buf, "fn")
	m.Version = "7"
	m.OnExecution(lambdaCtx("r"), protocol.Summary{ExecutionID: "x", Status: "failed"})
	m.OnResponse(lambdaCtx("r"), 503)
	lines := parseEMF(t, buf.String())
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	want := [][][]string{
		{{"FunctionName", "Status"}, {"FunctionName"}, {"FunctionName", "ExecutedVersion", "Status"}},
		{{"FunctionName", "StatusCode"}, {"FunctionName", "ExecutedVersion", "StatusCode"}},
	}
	for i, l := range lines {
		if !slices.EqualFunc(l.Dimensions, want[i], slices.Equal) || l.Props["ExecutedVersion"] != "7" {
			t.Errorf("line %d: dimensions %v, ExecutedVersion %v", i, l.Dimensions, l.Props["ExecutedVersion"])
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Concurrent executions (the local server) never interleave their lines.
func TestMetricsConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	m := telemetry.NewMetrics(&buf, "")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			m.OnExecution(context.Background(), protocol.Summary{ExecutionID: strings.Repeat("x", i), Status: "failed",
				Failures: []protocol.NodeFailures{{NodeType: "set", Code: "FAILED", Count: 1}}})
		})
	}
	wg.Wait()
	if lines := parseEMF(t, buf.String()); len(lines) != 100 {
		t.Fatalf("%d lines, want 100", len(lines))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestMetricsWriteFailureIsDropped(t *testing.T) {
	// Must not panic or block: metrics never fail an execution.
	m := telemetry.NewMetrics(failingWriter{}, "f")
	m.OnExecution(context.Background(), protocol.Summary{Status: "completed"})
	m.OnResponse(context.Background(), 401)
}
