package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/infra/telemetry"
	"github.com/runnerd/lambda-runner/protocol"
)

var fixedNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) // 1735689600000 ms

const directive = `"_aws":{"Timestamp":1735689600000,"CloudWatchMetrics":[{"Namespace":"%s","Dimensions":[["Status"]],"Metrics":[` +
	`{"Name":"DurationMs","Unit":"Milliseconds"},{"Name":"Nodes","Unit":"Count"},{"Name":"InputTokens","Unit":"Count"},` +
	`{"Name":"OutputTokens","Unit":"Count"},{"Name":"ModelCalls","Unit":"Count"},{"Name":"ToolCalls","Unit":"Count"},` +
	`{"Name":"HTTPRequests","Unit":"Count"}]}]}`

func lambdaCtx(id string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
}

// The line's bytes are pinned: CloudWatch silently drops a line whose
// directive is malformed, so any drift in shape must fail here.
func TestMetricsLine(t *testing.T) {
	tests := []struct {
		name      string
		namespace string
		ctx       context.Context
		sum       engine.Summary
		want      string
	}{
		{
			name: "completed under Lambda",
			ctx:  lambdaCtx("req-1"),
			sum: engine.Summary{ExecutionID: "0190-exec", Status: "completed", Nodes: 3,
				Duration: 1500*time.Millisecond + 250*time.Microsecond,
				Usage:    protocol.Usage{InputTokens: 120, OutputTokens: 45, ModelCalls: 2, ToolCalls: 1, HTTPRequests: 4}},
			want: `{` + strings.Replace(directive, "%s", "WorkflowRunner", 1) +
				`,"Status":"completed","DurationMs":1500.25,"Nodes":3,"InputTokens":120,"OutputTokens":45,` +
				`"ModelCalls":2,"ToolCalls":1,"HTTPRequests":4,"executionId":"0190-exec","requestId":"req-1"}` + "\n",
		},
		{
			name:      "failed, no request, other namespace",
			namespace: "Staging/Runner",
			ctx:       context.Background(),
			sum:       engine.Summary{ExecutionID: "x", Status: "failed", Nodes: 1, Duration: 300 * time.Microsecond},
			want: `{` + strings.Replace(directive, "%s", "Staging/Runner", 1) +
				`,"Status":"failed","DurationMs":0.3,"Nodes":1,"InputTokens":0,"OutputTokens":0,` +
				`"ModelCalls":0,"ToolCalls":0,"HTTPRequests":0,"executionId":"x"}` + "\n",
		},
		{
			name: "empty status is named",
			ctx:  context.Background(),
			sum:  engine.Summary{ExecutionID: "y"},
			want: `{` + strings.Replace(directive, "%s", "WorkflowRunner", 1) +
				`,"Status":"unknown","DurationMs":0,"Nodes":0,"InputTokens":0,"OutputTokens":0,` +
				`"ModelCalls":0,"ToolCalls":0,"HTTPRequests":0,"executionId":"y"}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := telemetry.NewMetrics(&buf)
			m.Namespace = tt.namespace
			m.Now = func() time.Time { return fixedNow }
			m.OnExecution(tt.ctx, tt.sum)
			if got := buf.String(); got != tt.want {
				t.Errorf("line:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// Every metric named in the directive is a number at the top level, and
// every dimension a string there: what CloudWatch requires to extract.
func TestMetricsDirectiveMatchesProperties(t *testing.T) {
	var buf bytes.Buffer
	telemetry.NewMetrics(&buf).OnExecution(context.Background(), engine.Summary{ExecutionID: "e", Status: "suspended"})
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	raw, _ := json.Marshal(line["_aws"])
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if age := time.Since(time.UnixMilli(meta.Timestamp)); age < 0 || age > time.Minute {
		t.Errorf("timestamp %d is not now", meta.Timestamp)
	}
	if len(meta.CloudWatchMetrics) != 1 || len(meta.CloudWatchMetrics[0].Metrics) != 7 {
		t.Fatalf("directive %+v", meta.CloudWatchMetrics)
	}
	d := meta.CloudWatchMetrics[0]
	for _, set := range d.Dimensions {
		for _, dim := range set {
			if _, ok := line[dim].(string); !ok {
				t.Errorf("dimension %s is %T, want a string property", dim, line[dim])
			}
		}
	}
	for _, m := range d.Metrics {
		if _, ok := line[m.Name].(float64); !ok {
			t.Errorf("metric %s is %T, want a number property", m.Name, line[m.Name])
		}
	}
}

// Concurrent executions (the local server) never interleave their lines.
func TestMetricsConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	m := telemetry.NewMetrics(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			m.OnExecution(context.Background(), engine.Summary{ExecutionID: strings.Repeat("x", i), Status: "completed"})
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("not one JSON object: %q", l)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestMetricsWriteFailureIsDropped(t *testing.T) {
	// Must not panic or block: metrics never fail an execution.
	telemetry.NewMetrics(failingWriter{}).OnExecution(context.Background(), engine.Summary{Status: "completed"})
}
