package engine

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// What the redactor learns (values built from secrets, scrubber.learn) is
// the execution's, wherever its nodes run. A distributed map's batches run
// in other invocations, each with a redactor of its own, so:
//
//   - the parent sends what it has learned in each batch's event
//     (batchDoc.Learned), and the child knows it before anything runs
//     (scrubber.adopt);
//   - the child reports what it learns to the parent as it learns it, on a
//     private line of its stream (batchLearnedType) written before the
//     request that carries the value is sent, and again in its end line;
//     the parent learns it (scrubber.absorb) and passes the line to no one;
//   - the parent scrubs the outputs it decodes from the children again
//     (rescrub), with everything learned by then;
//   - the bounds are the execution's: when a batch is sent, the parent
//     lends it a share of what is left of them (scrubber.lend), reserved
//     until the batch ends (scrubber.release), so that the execution learns
//     no more than in process, however many batches there are.

// batchLearnedType is the private line of a child's stream that reports
// values its redactor learned. It is never emitted to the parent's sink.
const batchLearnedType = "batch.learned"

// learnCaps are totals a redactor's learning may reach: distinct shadows
// (keys) and their bytes (worst), values learned and their bytes.
type learnCaps struct {
	Keys   int `json:"keys"`
	Worst  int `json:"worst"`
	Values int `json:"values"`
	Bytes  int `json:"bytes"`
}

// executionCaps are an execution's bounds (see maxDerivedSecrets).
var executionCaps = learnCaps{Keys: maxDerivedSecrets, Worst: maxDerivedTotal, Values: maxLearned, Bytes: maxLearnedBytes}

func (a learnCaps) plus(b learnCaps) learnCaps {
	return learnCaps{a.Keys + b.Keys, a.Worst + b.Worst, a.Values + b.Values, a.Bytes + b.Bytes}
}

func (a learnCaps) minus(b learnCaps) learnCaps {
	return learnCaps{a.Keys - b.Keys, a.Worst - b.Worst, a.Values - b.Values, a.Bytes - b.Bytes}
}

// learnedSet is what a redactor learned, as batches carry it: the values'
// shadows (keys, which the bounds count) and the values. Bytes, so base64
// in JSON: a part cut from a value may not be valid UTF-8, which a JSON
// string would not keep as it is.
type learnedSet struct {
	Keys   [][]byte `json:"keys,omitempty"`
	Values [][]byte `json:"values,omitempty"`
}

func (l learnedSet) empty() bool { return len(l.Keys) == 0 && len(l.Values) == 0 }

// batchLearned is the private line of a child's stream.
type batchLearned struct {
	Type string `json:"type"`
	learnedSet
}

// learnedDocBytes bounds what a learnedSet and its learnCaps take in a
// batch's event: every learned value and key at their bounds, base64, with
// their quotes and commas.
const learnedDocBytes = (maxLearnedBytes+2)/3*4 + (maxDerivedTotal+2)/3*4 + 3*(maxLearned+maxDerivedSecrets) + 256

// shareNote tells, in a refusal, that the bound was a batch's share.
func (s *scrubber) shareNote() string {
	if !s.shared {
		return ""
	}
	return " (a distributed map's batch may learn only its share of what the execution has left of these)"
}

// reported keeps what learn added for the batch's end and reports it to the
// parent, in a child; the caller holds s.mu.
func (s *scrubber) reported(keys, values []string) error {
	if s.report == nil {
		return nil
	}
	var set learnedSet
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
		return Errorf(protocol.CodeInvocationFailed, "a value built from secrets could not be reported to the distributed map's parent: its stream is closed")
	}
	return nil
}

// used is what s has learned, counted as learnCaps; the caller holds s.mu.
func (s *scrubber) used() learnCaps {
	return learnCaps{Keys: len(s.keys), Worst: s.worst, Values: len(s.derived), Bytes: s.learnedBytes}
}

// learnShare is what a batch was lent of the execution's bounds and has
// not used yet: held in the parent's reserved until the batch ends.
type learnShare struct{ left learnCaps }

// lend returns what s has learned, for a batch's event, and the totals the
// batch's redactor may reach: what s has learned plus a share of what is
// left, 1/n of what no other batch holds, which s reserves until release.
func (s *scrubber) lend(n int) (*learnedSet, *learnCaps, *learnShare) {
	if s == nil {
		return nil, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.used()
	left := s.caps.minus(u).minus(s.reserved)
	share := learnCaps{max(0, left.Keys) / n, max(0, left.Worst) / n, max(0, left.Values) / n, max(0, left.Bytes) / n}
	s.reserved = s.reserved.plus(share)
	s.shared = true
	set := &learnedSet{}
	for k := range s.keys {
		set.Keys = append(set.Keys, []byte(k))
	}
	for v := range s.derived {
		set.Values = append(set.Values, []byte(v))
	}
	slices.SortFunc(set.Keys, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	slices.SortFunc(set.Values, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	caps := u.plus(share)
	return set, &caps, &learnShare{left: share}
}

// release returns to the execution what a batch did not use of its share.
func (s *scrubber) release(sh *learnShare) {
	if s == nil || sh == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved = s.reserved.minus(sh.left)
	sh.left = learnCaps{}
}

// absorb learns what a batch reports having learned, charging it to the
// batch's share. What is past the share is learned all the same (it may
// have been sent already) and then fails the map LIMIT_EXCEEDED: a child
// keeps to its share, so this is a child that does not.
func (s *scrubber) absorb(set learnedSet, sh *learnShare) error {
	if s == nil || set.empty() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh == nil {
		sh = &learnShare{}
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
		if v == "" || s.derived[v] || slices.Contains(added, v) || strings.ReplaceAll(s.cur.Load().String(v), redact.Marker, "") == "" {
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
		return Errorf(protocol.CodeLimitExceeded, "a batch of the distributed map learned more values built from secrets than its share of the execution's bounds (%d values, %d bytes together)", maxDerivedSecrets, maxDerivedTotal)
	}
	return nil
}

// adopt makes s, a child's redactor, know what the parent had learned when
// it sent the batch, lets it learn up to caps (nothing more when caps is
// nil), and has it report what it learns through report.
func (s *scrubber) adopt(set *learnedSet, caps *learnCaps, report func(learnedSet) error) {
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

// learnedSince returns what a child's redactor learned beyond what the
// parent sent it.
func (s *scrubber) learnedSince() learnedSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since
}

// learnFromBatch learns what a child's private line reports. Its text is
// never shown: an error names the line, not what it holds.
func (r *run) learnFromBatch(line []byte, sh *learnShare) error {
	var l batchLearned
	if err := json.Unmarshal(line, &l); err != nil {
		return Errorf(protocol.CodeInvocationFailed, "the child's stream has a %s line that cannot be read", batchLearnedType)
	}
	return r.x.redact.absorb(l.learnedSet, sh)
}

// learnSlots is how many batches may share what is left of the bounds when
// one is sent: it and the free slots of its map and of the execution, and
// no more than the map's batches not yet sent (left, this one included).
func learnSlots(slots, all chan struct{}, left int) int {
	return max(1, min(cap(slots)-len(slots), cap(all)-len(all), left-1)+1)
}

// rescrub scrubs, in place, the outputs a distributed map decoded from its
// children, with what the parent's redactor knows once all have ended: a
// value one batch learned may be in another batch's output.
func (s *scrubber) rescrub(vals []any) {
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
