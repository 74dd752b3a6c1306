package engine

import (
	"context"
	"fmt"

	"github.com/runnerd/lambda-runner/engine/authorjson"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the one way an author's value becomes bytes that leave the
// engine's values: a code node's input frame, a distributed map's batch,
// a traced value. encodeAuthor sizes the value as it will be written
// (authorjson.SizeWithin: escapes counted, none for HTML), refuses it in-band
// when it is over its bound, charges those bytes to the execution's memory
// budget before anything is allocated, and encodes it once
// (authorjson.Append), into a buffer of that size, checking the context as
// it goes. The sizing and the writing are engine/authorjson's; the charge,
// here, is the one place an author value's bytes are counted.

// authorBytes is an author value encoded by encodeAuthor, charged to the
// execution's memory budget until release.
type authorBytes struct {
	B    []byte
	r    *run
	held int64
}

// release gives back what the bytes were charged; the caller drops B.
func (a *authorBytes) release() {
	if a != nil && a.held != 0 {
		a.r.budget.Add(-a.held)
		a.held = 0
	}
}

// encodeAuthor encodes v, what the message calls it ("with.input"), in at
// most limit bytes: sized first, charged to the execution's memory budget,
// then written once. The error is a *NodeError: LIMIT_EXCEEDED for a value
// over limit or nested past what JSON decoders read, MEMORY_BUDGET_EXCEEDED
// when the bytes would put the execution over its budget, EXPRESSION_ERROR
// for a value JSON cannot hold; or ctx's error.
func (r *run) encodeAuthor(ctx context.Context, what string, v any, limit int64) (*authorBytes, error) {
	n, err := sizeAuthor(what, v, limit)
	if err != nil {
		return nil, err
	}
	a, err := r.chargeAuthor(what, n)
	if err != nil {
		return nil, err
	}
	if a.B, err = appendJSON(ctx, make([]byte, 0, n), v); err != nil {
		a.release()
		return nil, err
	}
	return a, nil
}

// sizeAuthor is v's size as authorjson.Append writes it, refused over limit.
func sizeAuthor(what string, v any, limit int64) (int64, error) {
	n, fits, deep := authorjson.SizeWithin(v, limit)
	switch {
	case deep:
		return 0, Errorf(protocol.CodeLimitExceeded, "%s nests deeper than %d levels, which JSON decoders refuse", what, authorjson.MaxDepth)
	case !fits:
		return 0, Errorf(protocol.CodeLimitExceeded, "%s is more than %d bytes as JSON", what, limit)
	}
	return n, nil
}

// chargeAuthor charges n bytes of what to the execution's memory budget,
// which the node outputs held share, before they are allocated.
func (r *run) chargeAuthor(what string, n int64) (*authorBytes, error) {
	budget := r.x.limits.MemoryBudget
	if total := r.budget.Add(n); budget > 0 && total > budget {
		r.budget.Add(-n)
		return nil, Errorf(protocol.CodeMemoryBudgetExceeded, "%s takes %d bytes as JSON, which would put the execution over its memory budget of %d bytes (node outputs and values in flight hold about %d)", what, n, budget, total-n)
	}
	return &authorBytes{r: r, held: n}, nil
}

// appendJSON is authorjson.Append, its refusals as node errors.
func appendJSON(ctx context.Context, dst []byte, v any) ([]byte, error) {
	b, err := authorjson.Append(ctx, dst, v)
	if err != nil {
		err = codedError(err)
	}
	return b, err
}

// encodeError names what an encoding failed on, for a node's message.
func encodeError(what string, err error) error {
	if ne, ok := err.(*NodeError); ok {
		return &NodeError{Code: ne.Code, Message: what + ": " + ne.Message, Err: ne.Err}
	}
	return fmt.Errorf("%s: %w", what, err)
}
