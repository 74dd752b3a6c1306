package batch

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/runnerd/lambda-runner/engine/secrets"
)

// Writer is a child's stream: it serializes the writes of the batch's
// events, its private lines and its end line, and cancels the batch at the
// first failed write or flush: the parent has closed the stream
// (disconnected, failed or past its deadline), and nothing the batch does
// can reach it any more.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	flush  func() error // w's, or nil
	cancel context.CancelFunc
	err    error
}

// NewWriter returns the Writer of a child's stream to w, which calls
// cancel at the first failure. w's Flush, when it has one, is what
// Flusher returns.
func NewWriter(w io.Writer, cancel context.CancelFunc) *Writer {
	return &Writer{w: w, cancel: cancel, flush: flusherOf(w)}
}

// Write writes p, once no write before has failed.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.write(p)
}

// Flusher returns the flush a protocol.Writer calls after each line: w's,
// serialized with the writes, or nil when w has none.
func (b *Writer) Flusher() func() error {
	if b.flush == nil {
		return nil
	}
	return func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.flushLocked()
	}
}

func (b *Writer) flushLocked() error {
	if b.err != nil {
		return b.err
	}
	if err := b.flush(); err != nil {
		b.err = err
		b.cancel()
		return err
	}
	return nil
}

// Learned writes the private line that reports what the batch's redactor
// learned, and flushes it, before the request that carries it is sent.
func (b *Writer) Learned(set secrets.Learned) error {
	line, err := json.Marshal(LearnedLine{Type: LearnedType, Learned: set})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.write(append(line, '\n')); err != nil {
		return err
	}
	if b.flush != nil {
		return b.flushLocked()
	}
	return nil
}

func (b *Writer) write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.w.Write(p)
	if err != nil {
		b.err = err
		b.cancel()
	}
	return n, err
}

// flusherOf returns w's Flush, when it has one.
func flusherOf(w io.Writer) func() error {
	if f, ok := w.(interface{ Flush() error }); ok {
		return f.Flush
	}
	return nil
}
