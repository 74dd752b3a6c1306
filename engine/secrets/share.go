package secrets

import (
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// What the redactor learns (values built from secrets, Scrubber.Learn) is
// the execution's, wherever its nodes run. A distributed map's batches run
// in other invocations, each with a redactor of its own, so:
//
//   - the parent sends what it has learned in each batch's event
//     (engine/batch's Doc.Learned), and the child knows it before anything
//     runs (Scrubber.Adopt);
//   - the child reports what it learns to the parent as it learns it, on a
//     private line of its stream (engine/batch's LearnedType) written
//     before the request that carries the value is sent, and again in its
//     end line; the parent learns it (Scrubber.Absorb) and passes the line
//     to no one;
//   - the parent scrubs the outputs it decodes from the children again
//     (Scrubber.Rescrub), with everything learned by then;
//   - the bounds are the execution's: when a batch is sent, the parent
//     lends it a share of what is left of them (Scrubber.Lend), reserved
//     until the batch ends (Scrubber.Release), so that the execution learns
//     no more than in process, however many batches there are.

// Caps are totals a redactor's learning may reach: distinct shadows
// (Keys) and their bytes (Worst), values learned and their bytes.
type Caps struct {
	Keys   int `json:"keys"`
	Worst  int `json:"worst"`
	Values int `json:"values"`
	Bytes  int `json:"bytes"`
}

// executionCaps are an execution's bounds (see maxDerivedSecrets).
var executionCaps = Caps{Keys: maxDerivedSecrets, Worst: maxDerivedTotal, Values: maxLearned, Bytes: maxLearnedBytes}

// Bounds returns an execution's bounds on what its redactor learns,
// however many batches it runs in.
func Bounds() Caps { return executionCaps }

func (a Caps) plus(b Caps) Caps {
	return Caps{a.Keys + b.Keys, a.Worst + b.Worst, a.Values + b.Values, a.Bytes + b.Bytes}
}

func (a Caps) minus(b Caps) Caps {
	return Caps{a.Keys - b.Keys, a.Worst - b.Worst, a.Values - b.Values, a.Bytes - b.Bytes}
}

// Learned is what a redactor learned, as batches carry it: the values'
// shadows (Keys, which the bounds count) and the values. Bytes, so base64
// in JSON: a part cut from a value may not be valid UTF-8, which a JSON
// string would not keep as it is.
type Learned struct {
	Keys   [][]byte `json:"keys,omitempty"`
	Values [][]byte `json:"values,omitempty"`
}

// Empty reports whether l holds nothing.
func (l Learned) Empty() bool { return len(l.Keys) == 0 && len(l.Values) == 0 }

// LearnedDocBytes bounds what a Learned and its Caps take in a
// batch's event: every learned value and key at their bounds, base64, with
// their quotes and commas.
const LearnedDocBytes = (maxLearnedBytes+2)/3*4 + (maxDerivedTotal+2)/3*4 + 3*(maxLearned+maxDerivedSecrets) + 256

// shareNote tells, in a refusal, that the bound was a batch's share.
func (s *Scrubber) shareNote() string {
	if !s.shared {
		return ""
	}
	return " (a distributed map's batch may learn only its share of what the execution has left of these)"
}

// reported keeps what Learn added for the batch's end and reports it to the
// parent, in a child; the caller holds s.mu.
func (s *Scrubber) reported(keys, values []string) error {
	if s.report == nil {
		return nil
	}
	var set Learned
	for _, k := range keys {
		set.Keys = append(set.Keys, []byte(k))
	}
	for _, v := range values {
		set.Values = append(set.Values, []byte(v))
	}
	s.since.Keys = append(s.since.Keys, set.Keys...)
	s.since.Values = append(s.since.Values, set.Values...)
	if err := s.report(set); err != nil {
		// The parent cannot learn it: the request is not sent.
		return errorf(protocol.CodeInvocationFailed, "a value built from secrets could not be reported to the distributed map's parent: its stream is closed")
	}
	return nil
}

// used is what s has learned, counted as Caps; the caller holds s.mu.
func (s *Scrubber) used() Caps {
	return Caps{Keys: len(s.keys), Worst: s.worst, Values: len(s.derived), Bytes: s.learnedBytes}
}

// Share is what a batch was lent of the execution's bounds and has not
// used yet: held in the parent's reserved until the batch ends.
type Share struct{ left Caps }

// Lend returns what s has learned, for a batch's event, and the totals the
// batch's redactor may reach: what s has learned plus a share of what is
// left, 1/n of what no other batch holds, which s reserves until release.
func (s *Scrubber) Lend(n int) (*Learned, *Caps, *Share) {
	if s == nil {
		return nil, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.used()
	left := s.caps.minus(u).minus(s.reserved)
	share := Caps{max(0, left.Keys) / n, max(0, left.Worst) / n, max(0, left.Values) / n, max(0, left.Bytes) / n}
	s.reserved = s.reserved.plus(share)
	s.shared = true
	set := s.known()
	caps := u.plus(share)
	return set, &caps, &Share{left: share}
}

// known is what s has learned, sorted; the caller holds s.mu.
func (s *Scrubber) known() *Learned {
	set := &Learned{}
	for k := range s.keys {
		set.Keys = append(set.Keys, []byte(k))
	}
	for v := range s.derived {
		set.Values = append(set.Values, []byte(v))
	}
	slices.SortFunc(set.Keys, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	slices.SortFunc(set.Values, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	return set
}

// Known returns what s has learned, sorted: the shadows and the values.
// The nil Scrubber has learned nothing.
func (s *Scrubber) Known() Learned {
	if s == nil {
		return Learned{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.known()
}

// Usage returns what s has learned, counted as Caps, and what it holds
// reserved for the batches it has lent a share to and that have not
// ended.
func (s *Scrubber) Usage() (used, reserved Caps) {
	if s == nil {
		return Caps{}, Caps{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used(), s.reserved
}

// Release returns to the execution what a batch did not use of its share.
func (s *Scrubber) Release(sh *Share) {
	if s == nil || sh == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved = s.reserved.minus(sh.left)
	sh.left = Caps{}
}

// Absorb learns what a batch reports having learned, charging it to the
// batch's share. What is past the share is learned all the same (it may
// have been sent already) and then fails the map LIMIT_EXCEEDED: a child
// keeps to its share, so this is a child that does not.
func (s *Scrubber) Absorb(set Learned, sh *Share) error {
	if s == nil || set.Empty() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh == nil {
		sh = &Share{}
	}
	over := false
	take := func(left, reserved *int, n int) {
		if n > *left {
			over, n = true, *left
		}
		*left -= n
		*reserved -= n
	}
	for _, b := range set.Keys {
		k := string(b)
		if k == "" || s.keys[k] {
			continue
		}
		s.keys[k] = true
		s.worst += len(k)
		take(&sh.left.Keys, &s.reserved.Keys, 1)
		take(&sh.left.Worst, &s.reserved.Worst, len(k))
	}
	var added []string
	for _, b := range set.Values {
		v := string(b)
		if v == "" || s.derived[v] || slices.Contains(added, v) || s.plain[v] {
			continue
		}
		added = append(added, v)
		s.derived[v] = true
		s.learnedBytes += len(v)
		take(&sh.left.Values, &s.reserved.Values, 1)
		take(&sh.left.Bytes, &s.reserved.Bytes, len(v))
	}
	if len(added) > 0 {
		s.cur.Store(s.cur.Load().With(added...))
	}
	if over {
		return errorf(protocol.CodeLimitExceeded, "a batch of the distributed map learned more values built from secrets than its share of the execution's bounds (%d values, %d bytes together)", maxDerivedSecrets, maxDerivedTotal)
	}
	return nil
}

// Adopt makes s, a child's redactor, know what the parent had learned when
// it sent the batch, lets it learn up to caps (nothing more when caps is
// nil), and has it report what it learns through report.
func (s *Scrubber) Adopt(set *Learned, caps *Caps, report func(Learned) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var added []string
	if set != nil {
		for _, b := range set.Keys {
			if k := string(b); k != "" && !s.keys[k] {
				s.keys[k] = true
				s.worst += len(k)
			}
		}
		for _, b := range set.Values {
			if v := string(b); v != "" && !s.derived[v] {
				s.derived[v] = true
				s.learnedBytes += len(v)
				added = append(added, v)
			}
		}
	}
	if len(added) > 0 {
		s.cur.Store(s.cur.Load().With(added...))
	}
	s.caps = s.used()
	if caps != nil {
		s.caps = *caps
	}
	s.shared = true
	s.report = report
}

// LearnedSince returns what a child's redactor learned beyond what the
// parent sent it.
func (s *Scrubber) LearnedSince() Learned {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since
}

// Rescrub scrubs, in place, the outputs a distributed map decoded from its
// children, with what the parent's redactor knows once all have ended: a
// value one batch learned may be in another batch's output.
func (s *Scrubber) Rescrub(vals []any) {
	r := s.redactor()
	if r.Empty() {
		return
	}
	for i, v := range vals {
		vals[i] = scrubInPlace(r, v)
	}
}

// scrubInPlace is scrubValue for a value the caller owns alone (decoded
// here): its maps and arrays are changed, not copied.
func scrubInPlace(r *redact.Redactor, v any) any {
	switch v := v.(type) {
	case map[string]any:
		var renamed []string
		for k, e := range v {
			v[k] = scrubInPlace(r, e)
			if r.String(k) != k {
				renamed = append(renamed, k)
			}
		}
		for _, k := range renamed {
			e := v[k]
			delete(v, k)
			v[r.String(k)] = e
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = scrubInPlace(r, e)
		}
		return v
	}
	return scrubValue(r, v)
}
