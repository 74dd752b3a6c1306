package telemetry_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/infra/telemetry"
)

// logged returns the decoded records written by fn.
func logged(t *testing.T, fn func(*slog.Logger)) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	fn(slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(&buf, nil))))
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		// Decode into a list of keys too: a duplicated key would be
		// hidden by a map.
		if n := strings.Count(l, `"requestId":`); n > 1 {
			t.Errorf("requestId %d times in %s", n, l)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLogHandlerRequestID(t *testing.T) {
	tests := []struct {
		name  string
		begin string // BeginInvocation id, if any
		log   func(*slog.Logger)
		want  any // requestId of the one record; nil: absent
	}{
		{"from the invocation context", "", func(l *slog.Logger) {
			l.InfoContext(lambdaCtx("ctx-id"), "m")
		}, "ctx-id"},
		{"context beats the invocation in flight", "flight-id", func(l *slog.Logger) {
			l.InfoContext(lambdaCtx("ctx-id"), "m")
		}, "ctx-id"},
		{"in flight, logged without context", "flight-id", func(l *slog.Logger) {
			l.Info("m", "executionId", "e1")
		}, "flight-id"},
		{"the logger's own id is kept", "flight-id", func(l *slog.Logger) {
			l.With("requestId", "mine").InfoContext(lambdaCtx("ctx-id"), "m")
		}, "mine"},
		{"the record's own id is kept", "flight-id", func(l *slog.Logger) {
			l.Info("m", "requestId", "mine")
		}, "mine"},
		{"outside Lambda nothing is added", "", func(l *slog.Logger) {
			l.Info("m")
		}, nil},
		{"not inside a group", "flight-id", func(l *slog.Logger) {
			l.WithGroup("g").Info("m", "k", 1)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.begin != "" {
				defer telemetry.BeginInvocation(tt.begin)()
			}
			recs := logged(t, tt.log)
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			if got := recs[0]["requestId"]; got != tt.want {
				t.Errorf("requestId = %v, want %v (record %v)", got, tt.want, recs[0])
			}
		})
	}
}

func TestBeginInvocationEnds(t *testing.T) {
	endFirst := telemetry.BeginInvocation("first")
	endSecond := telemetry.BeginInvocation("second")
	endFirst() // a late end of an earlier invocation keeps the later one
	recs := logged(t, func(l *slog.Logger) { l.Info("m") })
	if got := recs[0]["requestId"]; got != "second" {
		t.Errorf("after the first ended: requestId = %v, want second", got)
	}
	endSecond()
	recs = logged(t, func(l *slog.Logger) { l.Info("m") })
	if got, ok := recs[0]["requestId"]; ok {
		t.Errorf("after both ended: requestId = %v, want none", got)
	}
	telemetry.BeginInvocation("")() // no id: nothing to record, nothing to break
}

func TestLogHandlerLevel(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	l.InfoContext(lambdaCtx("x"), "dropped")
	if buf.Len() != 0 {
		t.Errorf("below the level: %s", buf.String())
	}
}
