package egress

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/runnerd/lambda-runner/engine/jsonweight"
)

// A ReadLimit bounds the bytes read from outside through the response
// bodies it wraps, while they are read: the read that would cross the limit
// fails, so a decoder above it (an SDK's io.ReadAll, an SSE scanner) never
// holds more. Adapters whose SDKs read the body themselves (model
// providers, MCP) wrap each response with Body, from an http.RoundTripper
// or a middleware.
//
// A limit counts every body it wraps together (all the pages of a listing,
// say); with a parent, each read is charged to the parent too. An in-flight
// limit (NewInFlightLimit) gives a body's bytes back when the body is
// closed: it bounds what is being read at once, not in total.
//
// An SDK decodes a reply into types of its own, which can hold many times
// its text: a structure per array element, copies of strings, the raw text
// of each field. A costed limit (Costed) charges its in-flight parents that
// estimate instead, and holds it past the body's Close, since the SDK
// decodes after closing, until the caller's Release.
//
// The SDKs do not all keep the error a body returns, so after a call the
// adapter asks Err which limit was crossed. The zero value and nil bound
// nothing. A ReadLimit is safe for concurrent use.
type ReadLimit struct {
	max      int64
	what     string
	inFlight bool
	weighed  bool
	cost     Cost
	parent   *ReadLimit
	// held is what l's costed bodies charged the in-flight limits above it
	// and have not given back: Release does.
	held atomic.Int64

	n    atomic.Int64
	mu   sync.Mutex
	err  *ReadLimitError
	done chan struct{} // closed when err is set
}

// ReadLimitError is the failure of a read that would cross a ReadLimit.
type ReadLimitError struct {
	// What names what was too big ("model reply", "tools/list", ...).
	What string
	// Limit is the limit's maximum, in bytes.
	Limit int64
	// InFlight is set when the bytes being read at once, not one reply,
	// were too many.
	InFlight bool
	// Weighed is set when the reply was counted as what it decodes to.
	Weighed bool
	// Costed is set when what was too much is what an SDK would hold
	// decoding: the reply's alone, or with InFlight, of the replies read
	// at once.
	Costed bool
}

func (e *ReadLimitError) Error() string {
	switch {
	case e.InFlight && e.Costed:
		return fmt.Sprintf("replies being read at once would take more than %d bytes to decode", e.Limit)
	case e.Costed:
		return fmt.Sprintf("%s would take more than %d bytes to decode", e.What, e.Limit)
	case e.InFlight:
		return fmt.Sprintf("replies being read at once exceed %d bytes", e.Limit)
	case e.Weighed:
		return fmt.Sprintf("%s exceeds %d bytes (as decoded)", e.What, e.Limit)
	}
	return fmt.Sprintf("%s exceeds %d bytes", e.What, e.Limit)
}

// NewReadLimit returns a limit of max bytes over every body it wraps, named
// what in its error, and charged to parent as well (nil for none). max <= 0
// means no bound of its own.
func NewReadLimit(max int64, what string, parent *ReadLimit) *ReadLimit {
	return &ReadLimit{max: max, what: what, parent: parent, done: make(chan struct{})}
}

// Weighed makes l count each body as the value it decodes to will weigh
// (jsonweight), or its bytes when they are more, and returns l. It is for
// bodies an SDK decodes whole (an MCP response): their bytes are bounded
// as they are read, but decoding multiplies them (4 MB of "{}," decoded to
// 86 MB), so the weight is what must stay within the limit, and it is what
// the in-flight limit above is charged.
func (l *ReadLimit) Weighed() *ReadLimit {
	if l != nil {
		l.weighed = true
	}
	return l
}

// Cost is what an SDK spends on the heap decoding a reply into its types,
// at most: PerByte for each byte of the reply's text and PerValue for each
// JSON value in it (an element, a member's value, a scalar), as measured
// for that SDK. The zero Cost charges what the limit itself counts.
type Cost struct {
	PerByte, PerValue int64
}

// of returns the cost of a text of n bytes holding values JSON values.
func (c Cost) of(n, values int64) int64 { return n*c.PerByte + values*c.PerValue }

// Costed makes l weighed (as Weighed does) and charge its in-flight
// parents, for each body, c's estimate of what decoding it will hold,
// until Release, rather than its bytes until Close; it returns l. It is
// for a reply an SDK reads whole, closes, then decodes into its own types
// (a model reply): each such reply in progress counts for what it costs
// while it costs it.
func (l *ReadLimit) Costed(c Cost) *ReadLimit {
	if l != nil {
		l.weighed = true
		l.cost = c
	}
	return l
}

// Release gives back to the in-flight limits above l what l's costed
// bodies still hold of them. Call it once the SDK's call has returned and
// its decoded reply is garbage; a limit that is not costed gives its
// bodies' bytes back as each is closed. Nil-safe.
func (l *ReadLimit) Release() {
	if l == nil {
		return
	}
	l.release(l.held.Swap(0))
}

// NewInFlightLimit returns a limit of max bytes being read at once: each
// body's bytes count until it is closed.
func NewInFlightLimit(max int64) *ReadLimit {
	return &ReadLimit{max: max, inFlight: true, done: make(chan struct{})}
}

// Done returns a channel closed when a read through l crosses a limit, so
// that a caller can stop waiting for the rest of a reply (nil for a nil l).
func (l *ReadLimit) Done() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.done
}

// Err returns the error of the first read that crossed l or its parent
// while reading through l, nil if none did.
func (l *ReadLimit) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		return nil
	}
	return l.err
}

// Body wraps rc so that its reads are counted against l. It returns rc
// itself when l is nil or bounds nothing.
func (l *ReadLimit) Body(rc io.ReadCloser) io.ReadCloser {
	if l == nil || rc == nil || (l.max <= 0 && l.parent == nil) {
		return rc
	}
	return &limitedBody{rc: rc, l: l}
}

// charge adds n bytes to l and its parents that are not in-flight limits,
// and flight to those that are, and reports the limit crossed, nil if none
// was. own is the body's whole cost so far when l is costed: one that
// alone is over an in-flight limit is this reply's failure, not the
// others'.
func (l *ReadLimit) charge(n, flight, own int64) *ReadLimitError {
	var crossed *ReadLimitError
	costed := l.cost != Cost{}
	for c := l; c != nil; c = c.parent {
		add := n
		if c.inFlight {
			add = flight
		}
		total := c.n.Add(add)
		switch {
		case crossed != nil || c.max <= 0 || total <= c.max:
		case c.inFlight && costed && own > c.max:
			crossed = &ReadLimitError{What: l.what, Limit: c.max, Weighed: true, Costed: true}
		default:
			crossed = &ReadLimitError{What: c.what, Limit: c.max, InFlight: c.inFlight,
				Weighed: l.weighed, Costed: c.inFlight && costed}
		}
	}
	return crossed
}

// release gives n bytes back to the in-flight limits among l and its
// parents.
func (l *ReadLimit) release(n int64) {
	for c := l; c != nil; c = c.parent {
		if c.inFlight {
			c.n.Add(-n)
		}
	}
}

// record keeps the first crossing seen through l.
func (l *ReadLimit) record(e *ReadLimitError) {
	l.mu.Lock()
	if l.err == nil {
		if e.What == "" {
			e.What = l.what
		}
		l.err = e
		if l.done != nil {
			close(l.done)
		}
	}
	l.mu.Unlock()
}

// limitedBody is a body whose reads are charged to a ReadLimit.
type limitedBody struct {
	rc    io.ReadCloser
	l     *ReadLimit
	read  atomic.Int64 // charged so far, released on Close for in-flight limits
	err   atomic.Pointer[ReadLimitError]
	close sync.Once
	// meter weighs what was read, for a weighed limit; weight is what of
	// it was charged. Reads of one body do not run at once.
	meter         jsonweight.Meter
	bytes, weight int64
	cost          int64 // what of meter's cost estimate was charged
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if e := b.err.Load(); e != nil {
		return 0, e
	}
	n, err := b.rc.Read(p)
	if n > 0 {
		charge := int64(n)
		if b.l.weighed {
			b.bytes += int64(n)
			_, _ = b.meter.Write(p[:n])
			w := max(b.meter.Weight(), b.bytes)
			charge, b.weight = w-b.weight, w
		}
		flight := charge
		if c := b.l.cost; c != (Cost{}) {
			total := c.of(b.bytes, b.meter.Values())
			flight, b.cost = total-b.cost, total
			b.l.held.Add(flight)
		} else {
			b.read.Add(flight)
		}
		if e := b.l.charge(charge, flight, b.cost); e != nil {
			b.err.Store(e)
			b.l.record(e)
			// The bytes past the limit are not handed on: the reader
			// above never holds more than the limit.
			return 0, e
		}
	}
	return n, err
}

func (b *limitedBody) Close() error {
	// The body's bytes are released once, whoever closes it; a costed
	// body's charge is held until Release.
	b.close.Do(func() { b.l.release(b.read.Load()) })
	return b.rc.Close()
}
