package toolsets

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// A tool call given up by its context keeps running on the server until
// the server hears of it: servers, the SDK's own included, do not end a
// tool when the HTTP request that carried the call ends, and the SDK's
// server holds the DELETE that ends a session until the session's running
// tools return. The notice is the notifications/cancelled the SDK sends
// for the call; it sends it from a goroutine it starts as the call
// returns, and drops it when the session is closing by then. An execution
// that ends because its client left, its deadline passed or a node timed
// out closes its Set at once, so without care the notices lose that race
// and every abandoned tool runs its full course.
//
// So each call carries a callTrace in its context; the SDK keeps the
// context's values on the notice's request, where the Set's transport
// sees it begin and end. Close waits for the notices of the calls given up
// before it closes the sessions.

// noticeGrace bounds how long Close waits for the notice of a call given
// up to begin. The SDK starts it as the call returns, so it only fails to
// begin when the session is broken already; once begun, the SDK bounds it
// (5 s).
const noticeGrace = 2 * time.Second

// noticeMaxBody is the largest request body examined for a notice: a
// notifications/cancelled is about a hundred bytes, a larger body is a
// call's.
const noticeMaxBody = 4 << 10

// methodCancelled is the JSON-RPC method of a cancellation notice.
const methodCancelled = "notifications/cancelled"

// callTrace follows one call's cancellation notice.
type callTrace struct {
	set      *Set
	once     sync.Once
	started  chan struct{} // closed when the notice's request begins
	finished chan struct{} // closed when it has ended
}

type traceKey struct{}

func (s *Set) newCallTrace() *callTrace {
	return &callTrace{set: s, started: make(chan struct{}), finished: make(chan struct{})}
}

// withTrace returns ctx carrying tr.
func withTrace(ctx context.Context, tr *callTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// noticeBegins reports whether req is the cancellation notice of a traced
// call; if so it marks the notice begun and returns the func that marks it
// ended, else nil.
func noticeBegins(req *http.Request) (end func()) {
	tr, ok := req.Context().Value(traceKey{}).(*callTrace)
	if !ok || req.Method != http.MethodPost || req.GetBody == nil ||
		req.ContentLength <= 0 || req.ContentLength > noticeMaxBody {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var msg struct {
		Method string `json:"method"`
	}
	if json.NewDecoder(io.LimitReader(body, noticeMaxBody)).Decode(&msg) != nil || msg.Method != methodCancelled {
		return nil
	}
	began := false
	tr.once.Do(func() {
		began = true
		close(tr.started)
	})
	if !began {
		return nil // one notice per call; a second is not waited for
	}
	return func() {
		close(tr.finished)
		tr.set.sent(tr)
	}
}

// abandon records that the call traced by tr was given up by its context,
// so that Close waits for its notice. Calls are operations, which Close
// lets end before it collects the notices, so none is recorded too late.
func (s *Set) abandon(tr *callTrace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-tr.finished:
		return // sent already
	default:
	}
	if s.abandoned == nil {
		s.abandoned = make(map[*callTrace]struct{})
	}
	s.abandoned[tr] = struct{}{}
}

// sent forgets tr once its notice has ended, so that a long execution
// does not keep the trace of every call it gave up.
func (s *Set) sent(tr *callTrace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.abandoned, tr)
}

// awaitNotices waits for the notices of the calls given up: each must
// begin within noticeGrace of the wait, and one begun is waited for to its
// end. Called by Close before it ends the sessions.
func (s *Set) awaitNotices() {
	s.mu.Lock()
	pending := s.abandoned
	s.abandoned = nil
	s.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	grace := time.NewTimer(noticeGrace)
	defer grace.Stop()
	expired := false
	for tr := range pending {
		if !expired {
			select {
			case <-tr.started:
			case <-grace.C:
				expired = true
			case <-s.stop.Done():
				return // CloseBy's bound: the notices are aborted
			}
		}
		select {
		case <-tr.started:
			select {
			case <-tr.finished:
			case <-s.stop.Done():
				return
			}
		default:
		}
	}
}
