package limits

import (
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/models"
)

// Zero means the default, field by field, and the zero Bounds serves.
func TestLimitsWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Bounds
		want Bounds
	}{
		{"zero", Bounds{}, Bounds{MaxNodes: 10_000, MaxConcurrency: 16, MaxMapItems: 10_000, MaxChildDepth: 8,
			MaxDepth: 128, MaxSchemaDepth: 32, MaxSchemaBytes: 256 << 10, MaxExpressions: DefaultMaxExpressions, MaxExprSteps: DefaultMaxExprSteps, MaxExprMemory: 16 << 20, MaxEventBytes: 64 << 10, MaxOutputBytes: 4 << 20, MemoryMB: 512, MemoryBudget: 128 << 20,
			MaxCodeBytes: 64 << 10, MaxCodeMemory: 64 << 20, MaxCodeLogBytes: 64 << 10,
			MaxDuration: 15 * time.Minute, Reserve: 500 * time.Millisecond}},
		{"memory sizes the budget", Bounds{MemoryMB: 1024}, Bounds{MaxNodes: 10_000, MaxConcurrency: 16, MaxMapItems: 10_000, MaxChildDepth: 8,
			MaxDepth: 128, MaxSchemaDepth: 32, MaxSchemaBytes: 256 << 10, MaxExpressions: DefaultMaxExpressions, MaxExprSteps: DefaultMaxExprSteps, MaxExprMemory: 16 << 20, MaxEventBytes: 64 << 10, MaxOutputBytes: 4 << 20, MemoryMB: 1024, MemoryBudget: 256 << 20,
			MaxCodeBytes: 64 << 10, MaxCodeMemory: 64 << 20, MaxCodeLogBytes: 64 << 10,
			MaxDuration: 15 * time.Minute, Reserve: 500 * time.Millisecond}},
		{"a small budget caps the output and expression memory", Bounds{MemoryBudget: 65536, MaxNodes: 3}, Bounds{MaxNodes: 3, MaxConcurrency: 16, MaxMapItems: 10_000, MaxChildDepth: 8,
			MaxDepth: 128, MaxSchemaDepth: 32, MaxSchemaBytes: 256 << 10, MaxExpressions: DefaultMaxExpressions, MaxExprSteps: DefaultMaxExprSteps, MaxExprMemory: 65536, MaxEventBytes: 64 << 10, MaxOutputBytes: 65536, MemoryMB: 512, MemoryBudget: 65536,
			MaxCodeBytes: 64 << 10, MaxCodeMemory: 64 << 20, MaxCodeLogBytes: 64 << 10,
			MaxDuration: 15 * time.Minute, Reserve: 500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); got != tt.want {
				t.Errorf("WithDefaults:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if got := (Bounds{MaxChildDepth: -1}).WithDefaults().MaxChildDepth; got != 0 {
		t.Errorf("a negative MaxChildDepth gives %d, want 0 (no child workflows)", got)
	}
	if Default() != (Bounds{}).WithDefaults() {
		t.Error("Default differs from the zero Bounds with defaults")
	}
}

// TestReads: the caps on what an execution reads follow the output cap
// and the memory budget.
func TestReads(t *testing.T) {
	tests := []struct {
		name string
		l    Bounds
		want ReadCaps
	}{
		{name: "defaults (512 MB)", want: ReadCaps{Reply: 4<<20 + 64<<10, ToolList: 4<<20 + 64<<10, ToolListPages: 100, Conversation: 16 << 20, InFlight: 64 << 20}},
		// In flight, one model reply of Reply bytes can still be decoded.
		{name: "a small budget caps the conversation", l: Bounds{MemoryBudget: 32 << 20},
			want: ReadCaps{Reply: 4<<20 + 64<<10, ToolList: 4<<20 + 64<<10, ToolListPages: 100, Conversation: 8 << 20,
				InFlight: models.MaxReplyCostPerByte * (4<<20 + 64<<10)}},
		{name: "a small output cap", l: Bounds{MaxOutputBytes: 1 << 20},
			want: ReadCaps{Reply: 1<<20 + 64<<10, ToolList: 1<<20 + 64<<10, ToolListPages: 100, Conversation: 4 << 20, InFlight: 64 << 20}},
	}
	for _, tt := range tests {
		if got := tt.l.Reads(); got != tt.want {
			t.Errorf("%s: Reads() = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
