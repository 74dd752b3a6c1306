package gcstart

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestInitSetsPercent(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: init leaves the target alone")
	}
	got := debug.SetGCPercent(100)
	defer debug.SetGCPercent(got)
	if got != Percent {
		t.Errorf("GC percent after init = %d, want %d", got, Percent)
	}
}
