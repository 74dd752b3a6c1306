package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrFinished is returned by a Writer once the terminal event is written.
var ErrFinished = errors.New("protocol: event stream already finished")

// ErrStreamLimit is returned by Emit once the stream has reached its byte
// limit: the event is dropped, and the terminal event will say so.
var ErrStreamLimit = errors.New("protocol: event stream limit reached")

// Writer frames events as NDJSON: one JSON object per line, each stamped with
// the protocol version, the execution id, its type and the time.
//
// A Writer made by NewWriter writes and flushes each line as it is emitted.
// One made by NewStreamWriter coalesces: see StreamOptions.
//
// It is safe for concurrent use. By construction a stream has exactly one
// terminal event and nothing after it: Emit takes only non-terminal events,
// Finish only terminal ones, and Finish closes the stream.
type Writer struct {
	w     io.Writer
	flush func() error
	id    string
	now   func() time.Time
	opts  StreamOptions
	ctx   context.Context // a coalescing Writer's: Emit waits for room only while it lives

	mu       sync.Mutex
	done     bool  // the terminal event was taken
	err      error // the first error writing to w
	line     []byte
	texts    [6]*string    // fields' scratch
	tmp      bytes.Buffer  // encoding/json's output, compacted raw values
	enc      *json.Encoder // writes to tmp
	sent     int64         // bytes taken into the stream, terminal reserve excluded
	limited  bool          // the stream limit was reached: events dropped since
	pending  []byte        // a coalescing Writer's lines not yet handed to w
	spare    []byte
	cond     sync.Cond // signalled when lines are pending, when room frees, at close
	started  bool      // the flusher goroutine runs
	closing  bool      // Finish was called: the flusher drains, or Finish writes the rest
	writing  bool      // a write to w is in progress, mu released
	urgent   chan struct{}
	exited   chan struct{}
	stopCtx  func() bool
	lastSent time.Time
	stamp    []byte // the time of the last event, to the second (appendTime)
	stampSec int64
	prefixes []linePrefix // each event type's line start (prefix)
	lastAt   time.Time    // the last line's time (at)
}

// StreamOptions bound and shape the stream of a Writer. The zero value
// bounds nothing and writes each line at once.
type StreamOptions struct {
	// MaxEventBytes bounds every line (0: unbounded). A longer event has
	// its longest texts cut and marked "…[$truncated: N bytes]", and its
	// traced input or output replaced by the $truncated marker, until it
	// fits. A result's output is never cut: it counts against
	// MaxStreamBytes instead.
	MaxEventBytes int
	// MaxStreamBytes bounds the whole stream (0: unbounded). Room for a
	// terminal error event (MaxEventBytes, or DefaultTerminalReserve) is
	// kept back, so the stream always ends properly: once an event would
	// cut into it, that event and every later one is dropped, OnLimit is
	// called, and the terminal event becomes an EXECUTION_FAILED error
	// naming LIMIT_EXCEEDED.
	MaxStreamBytes int64
	// OnLimit is called once, without the Writer's lock held, when
	// MaxStreamBytes is reached: the caller cancels the execution so that
	// nothing more runs.
	OnLimit func()
	// Escaped counts each line as the number of bytes it takes inside a
	// JSON string (with HTML escaping, as the Lambda runtime encodes a
	// buffered response), rather than its own length: a buffered proxy
	// response carries the stream as one JSON string, and its size limit
	// applies to that encoding.
	Escaped bool
	// FlushInterval, for a coalescing Writer, is the least time between two
	// writes to the underlying writer (DefaultFlushInterval if 0). Lines
	// emitted meanwhile go out together in one write and one flush. The
	// first line after a quiet spell, accepted and the terminal event are
	// written at once, and so are the lines pending once they fill half
	// of MaxBuffered. While a burst lasts (lines keep coming as the last
	// ones are written) the wait doubles with each write, up to eight
	// times FlushInterval.
	FlushInterval time.Duration
	// MaxBuffered bounds the bytes a coalescing Writer holds for a slow
	// client (DefaultMaxBuffered if 0), beside the write under way. When
	// it is full Emit waits for the client, but only while the Writer's
	// context lives: once it is done (the client left, the deadline
	// passed, the stream limit was hit) the event is dropped instead, so a
	// stalled client never holds the engine.
	MaxBuffered int
	// Deadline, when not zero, is when the stream must have ended: the
	// execution's deadline plus the room reserved for its terminal event.
	// Finish stops waiting for the Writer's goroutine then, the terminal
	// event out or not, so that a client that stops reading cannot hold
	// the execution past it. A write already under way, or the one Finish
	// makes itself when that goroutine is idle, is the transport's to end:
	// where it can, the caller sets its write deadline to the same time
	// instead (the local server); behind the Lambda adapters the
	// invocation ends then. The Writer's context should end at the
	// execution's deadline, so that no Emit waits past it either.
	Deadline time.Time
}

// Defaults of StreamOptions.
const (
	DefaultFlushInterval   = time.Millisecond
	DefaultMaxBuffered     = 1 << 20
	DefaultTerminalReserve = 64 << 10
)

// NewWriter returns a Writer for one execution that writes each line as it
// is emitted. flush, if not nil, is called after each line
// (http.ResponseController.Flush fits).
func NewWriter(w io.Writer, executionID string, flush func() error) *Writer {
	return newWriter(w, executionID, flush, StreamOptions{})
}

// NewStreamWriter returns a Writer for one execution bounded by o that
// coalesces: lines are handed to w by a goroutine of the Writer's own, at
// most every o.FlushInterval, so that a burst of events costs one write and
// one flush, and the engine never waits on the client while the buffer has
// room. Accepted and the terminal event are written at once; Finish returns
// when every line is out (or ctx, the execution's, is done).
func NewStreamWriter(ctx context.Context, w io.Writer, executionID string, flush func() error, o StreamOptions) *Writer {
	wr := newWriter(w, executionID, flush, o)
	wr.ctx = ctx
	return wr
}

// newWriter returns a Writer bounded by o that writes each line as it is
// emitted (no ctx: nothing coalesces).
func newWriter(w io.Writer, executionID string, flush func() error, o StreamOptions) *Writer {
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = DefaultMaxBuffered
	}
	wr := &Writer{w: w, flush: flush, id: executionID, now: time.Now, opts: o}
	wr.cond.L = &wr.mu
	return wr
}

// ExecutionID returns the id the Writer stamps on every event.
func (w *Writer) ExecutionID() string { return w.id }

// errEmitTerminal is returned by Emit given a Result or an Error: only Finish
// may write the terminal event, so that nothing can follow it.
var errEmitTerminal = errors.New("protocol: Emit given a terminal event; use Finish")

// Emit writes a non-terminal event. A terminal event (Result, Error) is
// refused and nothing is written: the stream ends only through Finish. Emit
// may shorten e's texts to fit MaxEventBytes.
func (w *Writer) Emit(e Event) error {
	if _, ok := e.(Terminal); ok {
		return errEmitTerminal
	}
	w.mu.Lock()
	err, hitLimit := w.emit(e)
	w.mu.Unlock()
	if hitLimit && w.opts.OnLimit != nil {
		w.opts.OnLimit()
	}
	return err
}

func (w *Writer) emit(e Event) (err error, hitLimit bool) {
	if err := w.closed(); err != nil {
		return err, false
	}
	_, accepted := e.(*Accepted)
	// accepted goes out at once; so does anything before the flusher runs.
	async := w.ctx != nil && (w.started || !accepted)
	if async {
		// Wait for room before encoding: the line is built in scratch
		// space shared by every caller, which another Emit may use
		// while this one waits. The buffer may so exceed MaxBuffered by
		// one line.
		for len(w.pending) >= w.opts.MaxBuffered && w.err == nil && w.ctx.Err() == nil {
			w.kick()
			w.cond.Wait()
		}
		if err := w.closed(); err != nil {
			return err, false
		}
		if len(w.pending) >= w.opts.MaxBuffered {
			return fmt.Errorf("protocol: event dropped, client not reading: %w", context.Cause(w.ctx)), false
		}
	}
	line, err := w.encode(e)
	if err != nil {
		return err, false
	}
	cost := w.cost(line)
	if m := w.opts.MaxStreamBytes; m > 0 && w.sent+cost > m-w.reserve() {
		w.limited = true
		return ErrStreamLimit, true
	}
	w.sent += cost
	if !async {
		return w.writeNow(line), false
	}
	if w.pending == nil {
		w.pending = getStreamBuf()
	}
	belowHalf := len(w.pending) < w.opts.MaxBuffered/2
	w.pending = append(w.pending, line...)
	w.start()
	w.cond.Broadcast()
	if belowHalf && len(w.pending) >= w.opts.MaxBuffered/2 && !w.writing {
		// Half full: the write starts now, while the other half fills,
		// rather than when the buffer is full and the engine must wait.
		w.kick()
	}
	return nil, false
}

// closed returns why no more events may be emitted, or nil.
func (w *Writer) closed() error {
	switch {
	case w.done:
		return ErrFinished
	case w.err != nil:
		return w.err
	case w.limited:
		return ErrStreamLimit
	}
	return nil
}

// Finish writes the terminal event and closes the stream to further events.
// After the stream limit was reached, t is replaced by an error saying so;
// a result too large for the room left is replaced likewise.
func (w *Writer) Finish(t Terminal) error {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return ErrFinished
	}
	w.done = true
	line, err := w.encodeTerminal(t)
	if err != nil {
		// Nothing else may end the stream: say so in the one error event
		// that always encodes.
		line, _ = w.encode(&Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: "terminal event unencodable: " + err.Error()}})
	}
	w.sent += w.cost(line)
	if !w.started {
		if w.err == nil {
			if werr := w.writeNow(line); err == nil {
				err = werr
			}
		} else if err == nil {
			err = w.err
		}
		w.mu.Unlock()
		return err
	}
	w.closing = true
	w.cond.Broadcast()
	w.kick()
	rest := append(w.pending, line...)
	inline := !w.writing
	if inline {
		// The flusher is waiting: the rest goes out from here, in one
		// write with the terminal line, rather than after waking the
		// flusher (on two vCPUs that handoff was most of Finish's time
		// for a short stream), and from the core that encoded it. The
		// flusher, woken, finds nothing pending and exits.
		w.pending = nil
		if w.err == nil {
			w.writeOut(rest)
		}
	} else {
		// The flusher is writing: it goes on with the rest as soon as
		// that write ends, sooner than this goroutine could once woken.
		w.pending = rest
	}
	w.mu.Unlock()
	if !w.waitExited() {
		// The client is not reading: the flusher still holds the
		// buffers, and ends when the transport gives up the write.
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err == nil {
			w.err = ErrNotRead
		}
		return w.err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if inline {
		w.pending = rest
	}
	// The flusher is gone and nothing appends once done: the buffers
	// serve the next stream.
	putStreamBuf(w.pending)
	putStreamBuf(w.spare)
	w.pending, w.spare = nil, nil
	if err == nil {
		err = w.err
	}
	return err
}

// ErrNotRead is returned by Finish when the client had not read the end
// of the stream by StreamOptions.Deadline.
var ErrNotRead = errors.New("protocol: the client did not read the event stream by its deadline")

// waitExited waits for the flusher to end, until Deadline at the latest;
// it reports whether it ended.
func (w *Writer) waitExited() bool {
	if w.opts.Deadline.IsZero() {
		<-w.exited
		return true
	}
	t := time.NewTimer(time.Until(w.opts.Deadline))
	defer t.Stop()
	select {
	case <-w.exited:
		return true
	case <-t.C:
		return false
	}
}

// writeOut writes b to w and flushes, without holding mu, which the caller
// holds; writing is set meanwhile, so no other write starts. The first
// error is kept in w.err.
func (w *Writer) writeOut(b []byte) {
	w.writing = true
	w.mu.Unlock()
	_, err := w.w.Write(b)
	if err == nil && w.flush != nil {
		err = w.flush()
	}
	w.mu.Lock()
	w.writing = false
	if err != nil && w.err == nil {
		w.err = err
	}
}

// streamBufs holds the pending buffers of finished coalescing Writers, as
// *[]byte. A stream that grew its two buffers from nothing allocated about
// 1 MB for a 1,000-node run (each swap started the next buffer empty, and
// a busy flusher let it double several times): most of what the HTTP path
// allocated beyond the engine. A buffer holds only lines already sent, and
// only its first len bytes are ever written.
var streamBufs sync.Pool

// Sizes of a pooled stream buffer: a new one's capacity, and the largest
// kept (a buffer grows past MaxBuffered by at most one line).
const (
	streamBufSize      = 64 << 10
	maxPooledStreamBuf = 4 << 20
)

func getStreamBuf() []byte {
	if p, _ := streamBufs.Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, streamBufSize)
}

func putStreamBuf(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledStreamBuf {
		return
	}
	b = b[:0]
	streamBufs.Put(&b)
}

// encodeTerminal encodes the terminal event to send in place of t: t, or
// an error when the stream limit was reached or a result does not fit in
// the room left. A result that fits is encoded once.
func (w *Writer) encodeTerminal(t Terminal) ([]byte, error) {
	m := w.opts.MaxStreamBytes
	if m <= 0 {
		return w.encode(t)
	}
	if w.limited {
		return w.encode(&Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: fmt.Sprintf(
			"%s: the event stream reached its limit of %d bytes (maxStreamBytes); the execution was stopped and later events dropped",
			CodeLimitExceeded, m)}})
	}
	line, err := w.encode(t)
	if _, ok := t.(*Result); ok && err == nil && w.sent+w.cost(line) > m {
		return w.encode(&Error{Error: ExecutionError{Code: CodeExecutionFailed, Message: fmt.Sprintf(
			"%s: the result of %d bytes does not fit in the event stream's limit of %d bytes (maxStreamBytes), %d of them already sent",
			CodeLimitExceeded, len(line), m, w.sent)}})
	}
	return line, err
}

// Room returns how many bytes the terminal event may still take before
// MaxStreamBytes, counted as the limit counts them (escaped when Escaped),
// or -1 when the stream is unbounded. A result larger than that is replaced
// by an error event; the engine asks first, so as not to encode a result
// that cannot be sent.
func (w *Writer) Room() int64 {
	m := w.opts.MaxStreamBytes
	if m <= 0 {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(m-w.sent, 0)
}

// Finished reports whether the terminal event was written.
func (w *Writer) Finished() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// Limited reports whether the stream reached MaxStreamBytes.
func (w *Writer) Limited() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limited
}

// Err returns the first error met writing to the underlying writer: a client
// that went away.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// reserve is the room kept back for the terminal event.
func (w *Writer) reserve() int64 {
	r := int64(w.opts.MaxEventBytes)
	if r <= 0 {
		r = DefaultTerminalReserve
	}
	if w.opts.Escaped {
		r *= 6 // every byte may become \u00XX
	}
	return r
}

// cost is what line counts against MaxStreamBytes.
func (w *Writer) cost(line []byte) int64 {
	if w.opts.Escaped {
		return int64(escapedLen(line))
	}
	return int64(len(line))
}

// writeNow writes line and flushes; the caller holds mu and nothing is
// pending.
func (w *Writer) writeNow(line []byte) error {
	if _, err := w.w.Write(line); err != nil {
		w.err = err
		return err
	}
	if w.flush != nil {
		if err := w.flush(); err != nil {
			w.err = err
			return err
		}
	}
	if w.ctx != nil {
		// A coalescing Writer's accepted: the first events after it wait
		// out FlushInterval like any others rather than leave in a write
		// of their own.
		w.lastSent = time.Now()
	}
	return nil
}

// start launches the flusher; the caller holds mu.
func (w *Writer) start() {
	if w.started {
		return
	}
	w.started = true
	w.urgent = make(chan struct{}, 1)
	w.exited = make(chan struct{})
	// A waiting Emit must notice the context ending.
	w.stopCtx = context.AfterFunc(w.ctx, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	go w.flushLoop()
}

// kick asks the flusher to write now rather than at the next interval.
func (w *Writer) kick() {
	select {
	case w.urgent <- struct{}{}:
	default:
	}
}

// flushLoop hands pending lines to w until Finish has been called and
// everything is out (Finish writes the rest itself when the flusher is not
// writing). It writes without holding mu (writeOut), so Emit never waits
// on the client while the buffer has room.
//
// The wait between writes starts at FlushInterval and doubles, up to
// maxFlushGrowth times it, while a burst lasts: while each write's lines
// came sooner than the wait, and no quiet spell of FlushInterval came
// between two writes. Each write wakes this goroutine, takes a few
// system calls (net/http frames a chunk in three) and wakes the client,
// all of it beside the engine on a function of one or two CPUs: a
// 10,000-node chain made a write every millisecond of its 40. Events far
// apart still go out within FlushInterval, and in a burst none waits more
// than maxFlushGrowth times it.
func (w *Writer) flushLoop() {
	defer close(w.exited)
	defer w.stopCtx()
	timer := time.NewTimer(0)
	<-timer.C
	interval := w.opts.FlushInterval
	w.mu.Lock()
	for {
		idle := false
		for len(w.pending) == 0 && !w.closing {
			w.cond.Wait()
			idle = true
		}
		if len(w.pending) == 0 || w.err != nil {
			w.pending = w.pending[:0]
			if w.closing {
				w.mu.Unlock()
				return
			}
			w.cond.Broadcast()
			continue
		}
		if idle && time.Since(w.lastSent) >= w.opts.FlushInterval {
			// A quiet spell ended: the burst is over.
			interval = w.opts.FlushInterval
		}
		slept := false
		if wait := interval - time.Since(w.lastSent); !w.closing && wait > 0 && len(w.pending) < w.opts.MaxBuffered/2 {
			// Let a burst gather; a terminal event or a filling buffer
			// cuts the wait short.
			w.mu.Unlock()
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-w.urgent:
				if !timer.Stop() {
					<-timer.C
				}
			}
			w.mu.Lock()
			slept = true
		}
		if len(w.pending) == 0 {
			continue // Finish took the rest, to write it itself
		}
		buf := w.pending
		w.pending, w.spare = w.spare[:0], nil
		if w.pending == nil {
			w.pending = getStreamBuf()
		}
		// An Emit waiting for room goes on into the new buffer while
		// this one is written, not after.
		w.cond.Broadcast()
		w.writeOut(buf)
		w.lastSent = time.Now()
		w.spare = buf[:0]
		if slept {
			// Lines came faster than the interval: a burst.
			interval = min(2*interval, maxFlushGrowth*w.opts.FlushInterval)
		} else {
			interval = w.opts.FlushInterval
		}
		w.cond.Broadcast()
	}
}

// maxFlushGrowth bounds how far a burst stretches the wait between writes:
// 8 ms at the default FlushInterval.
const maxFlushGrowth = 8

// timeLayout is how events carry times: RFC 3339, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime formats t as events carry it: RFC 3339, UTC, milliseconds.
func FormatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}
