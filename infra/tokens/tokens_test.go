package tokens

import (
	"context"
	"errors"
	"testing"
)

func TestStatic(t *testing.T) {
	src := Static{Set: NewSet("alpha", " beta ", "")}
	tests := []struct {
		token string
		want  error
	}{
		{"alpha", nil},
		{"beta", nil},
		{"", ErrUnknown},
		{"alph", ErrUnknown},
		{"alpha ", ErrUnknown},
		{"gamma", ErrUnknown},
	}
	for _, tt := range tests {
		if err := src.Verify(context.Background(), tt.token); !errors.Is(err, tt.want) {
			t.Errorf("Verify(%q) = %v, want %v", tt.token, err, tt.want)
		}
	}
	if got := src.Set.Len(); got != 2 {
		t.Errorf("Len = %d, want 2 (empty entries dropped)", got)
	}
}

func TestZeroSetAcceptsNothing(t *testing.T) {
	var s Set
	if s.Contains("") || s.Contains("x") {
		t.Fatal("zero Set accepted a token")
	}
	u := s.Union(NewSet("x"))
	if !u.Contains("x") || u.Len() != 1 {
		t.Fatal("Union lost a token")
	}
}
