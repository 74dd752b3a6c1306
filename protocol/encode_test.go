package protocol

import (
	"testing"
	"time"
)

// TestAppendTime checks the reused second against a full format, across
// second, day and year boundaries and with times out of order.
func TestAppendTime(t *testing.T) {
	w := &Writer{}
	base := time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC)
	times := []time.Time{
		base, base.Add(999 * time.Millisecond), base.Add(999999999), base.Add(time.Second),
		base.Add(2*time.Second + 5*time.Millisecond), base.Add(2*time.Second + 123456789),
		base.Add(-time.Hour), base, time.Unix(0, 0).UTC(), time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for i := range 2000 {
		times = append(times, base.Add(time.Duration(i)*7919*time.Microsecond))
	}
	for _, tm := range times {
		got := string(w.appendTime(nil, tm))
		if want := tm.Format(timeLayout); got != want {
			t.Fatalf("appendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}
