package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"
)

// ErrFinished is returned by a Writer once the terminal event is written.
var ErrFinished = errors.New("protocol: event stream already finished")

// Writer frames events as NDJSON: one JSON object per line, each stamped with
// the protocol version, the execution id, its type and the time, and flushed
// at once so the client sees it as it happens.
//
// It is safe for concurrent use. By construction a stream has exactly one
// terminal event and nothing after it: Emit takes only non-terminal events,
// Finish only terminal ones, and Finish closes the stream.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	flush func() error
	id    string
	now   func() time.Time
	done  bool
	err   error
	buf   bytes.Buffer
}

// NewWriter returns a Writer for one execution. flush, if not nil, is called
// after each line (http.ResponseController.Flush fits).
func NewWriter(w io.Writer, executionID string, flush func() error) *Writer {
	return &Writer{w: w, flush: flush, id: executionID, now: time.Now}
}

// ExecutionID returns the id the Writer stamps on every event.
func (w *Writer) ExecutionID() string { return w.id }

// errEmitTerminal is returned by Emit given a Result or an Error: only Finish
// may write the terminal event, so that nothing can follow it.
var errEmitTerminal = errors.New("protocol: Emit given a terminal event; use Finish")

// Emit writes a non-terminal event. A terminal event (Result, Error) is
// refused and nothing is written: the stream ends only through Finish.
func (w *Writer) Emit(e Event) error {
	if _, ok := e.(Terminal); ok {
		return errEmitTerminal
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write(e)
}

// Finish writes the terminal event and closes the stream to further events.
func (w *Writer) Finish(t Terminal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.write(t)
	w.done = true
	return err
}

// Finished reports whether the terminal event was written.
func (w *Writer) Finished() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// Err returns the first error met writing to the underlying writer: a client
// that went away.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) write(e Event) error {
	if w.done {
		return ErrFinished
	}
	if w.err != nil {
		return w.err
	}
	h := e.header()
	h.Version = Version
	h.Type = e.eventType()
	h.ExecutionID = w.id
	h.At = FormatTime(w.now())
	w.buf.Reset()
	enc := json.NewEncoder(&w.buf)
	// Messages quote expressions with < and >; HTML escaping would only
	// make them unreadable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return err
	}
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		w.err = err
		return err
	}
	if w.flush != nil {
		if err := w.flush(); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// FormatTime formats t as events carry it: RFC 3339, UTC, milliseconds.
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
