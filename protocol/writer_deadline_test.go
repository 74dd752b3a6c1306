package protocol

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// stallingWriter takes its first write and then blocks every write until
// released: a client that read the head of the stream and stopped.
type stallingWriter struct {
	mu      sync.Mutex
	n       int
	release chan struct{}
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.n++
	first := s.n == 1
	s.mu.Unlock()
	if !first {
		<-s.release
	}
	return len(p), nil
}

// TestWriterDeadline: with a client that stops reading, no Emit waits past
// the Writer's context (the execution's deadline) and Finish returns by
// StreamOptions.Deadline with ErrNotRead, the write under way left to the
// transport.
func TestWriterDeadline(t *testing.T) {
	sw := &stallingWriter{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewStreamWriter(ctx, sw, "exec-1", nil, StreamOptions{MaxBuffered: 4096, Deadline: time.Now().Add(300 * time.Millisecond)})
	if err := w.Emit(&Accepted{}); err != nil {
		t.Fatal(err)
	}
	// Fill the buffer while the flusher is stuck in its write: an Emit
	// then waits, until the context ends.
	dropped := make(chan error, 1)
	go func() {
		for {
			if err := w.Emit(&NodeStarted{NodeID: "n"}); err != nil {
				dropped <- err
				return
			}
		}
	}()
	select {
	case err := <-dropped:
		t.Fatalf("Emit failed before the context ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-dropped; err == nil || errors.Is(err, ErrFinished) {
		t.Fatalf("Emit after the deadline = %v, want the event dropped", err)
	}

	if err := w.Finish(&Result{Status: StatusCompleted}); !errors.Is(err, ErrNotRead) {
		t.Errorf("Finish = %v, want ErrNotRead", err)
	}
	close(sw.release) // the transport gives the write up
	<-w.exited
}
