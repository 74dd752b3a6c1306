package document

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/schema"
	"github.com/runnerd/lambda-runner/protocol"
)

// Problems collects the problems found before acceptance: errors, which
// refuse the request, and warnings, which only Validate shows.
type Problems struct {
	inv      protocol.Invalid
	warnings []protocol.Detail
	// covered holds the paths the workflow schema already found fault
	// with. Checking goes on past schema errors (every problem in one
	// pass), and a later check of a value under one of them would only
	// restate it, so it is dropped.
	covered map[string]bool
	// Bare is set when a workflow document is checked without a request.
	Bare bool
	// busy is a check the runner could not make in time for want of
	// resources (a code node's syntax check, the sandbox busy): not a
	// problem of the request, which may be sent again (ErrBusy).
	busy *protocol.Detail
}

// Addf records a problem at path, unless a problem at or above path was
// already reported (cover).
func (d *Problems) Addf(path, format string, args ...any) {
	if d.isCovered(path) {
		return
	}
	d.inv.Add(path, format, args...)
}

// NeedsRuntimef records a problem that only the request's runtime payload
// can settle (a toolset, a model role, a child workflow, a secret it names).
// A bare workflow document, checked without a request, has no runtime yet:
// there it is a warning, so that `runnerctl validate` does not refuse what
// the server will supply.
func (d *Problems) NeedsRuntimef(path, format string, args ...any) {
	if d.Bare {
		d.Warnf(path, format+" (checked as a bare document: the request's runtime must supply it)", args...)
		return
	}
	d.Addf(path, format, args...)
}

// The expression language reports its problems to the list.
var _ lang.Problems = (*Problems)(nil)

// Invalid records a problem the expression language found.
func (d *Problems) Invalid(path, msg string) { d.Addf(path, "%s", msg) }

// NeedsRuntime records a problem of an expression that only the runtime
// payload settles (see NeedsRuntimef).
func (d *Problems) NeedsRuntime(path, msg string) { d.NeedsRuntimef(path, "%s", msg) }

// Warn records a warning of the expression language.
func (d *Problems) Warn(path, msg string) { d.Warnf(path, "%s", msg) }

// Warnf records a problem that does not refuse the request.
func (d *Problems) Warnf(path, format string, args ...any) {
	if d.isCovered(path) {
		return
	}
	if len(d.warnings) >= protocol.MaxDetails {
		return // bounded as errors are
	}
	w := protocol.Invalid{}
	w.Add(path, format, args...)
	d.warnings = append(d.warnings, w.Details...)
}

// cover marks path as reported: later problems at or under it are dropped.
func (d *Problems) cover(path string) {
	if d.covered == nil {
		d.covered = map[string]bool{}
	}
	d.covered[path] = true
}

// isCovered reports whether path or one of its ancestors is covered, with
// one lookup per path segment and no allocation.
func (d *Problems) isCovered(path string) bool {
	if len(d.covered) == 0 {
		return false
	}
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' || path[i] == '[' {
			if d.covered[path[:i]] {
				return true
			}
		}
	}
	return false
}

// Len is how many problems refuse the request, a check that could not be
// made counted as one.
func (d *Problems) Len() int {
	if d.busy != nil {
		return len(d.inv.Details) + 1
	}
	return len(d.inv.Details)
}

// Err returns the request's problems, or, when it has none but a check
// could not be made, an error wrapping ErrBusy.
func (d *Problems) Err() error {
	if len(d.inv.Details) == 0 {
		if d.busy != nil {
			return fmt.Errorf("%w: %s: %s", ErrBusy, d.busy.Path, d.busy.Message)
		}
		return nil
	}
	inv := d.inv
	return &inv
}

// SetBusy records the first check the runner could not make in time.
func (d *Problems) SetBusy(path, format string, args ...any) {
	if d.busy == nil {
		d.busy = &protocol.Detail{Path: path, Message: fmt.Sprintf(format, args...)}
	}
}

// ErrBusy is what Err wraps (and the engine's Prepare and PrepareBody
// fail with) when the request has no problem found but a check of it
// could not be made in time for want of resources (a code node's syntax
// check while the sandbox's workers are busy checking others): the
// request is not at fault, and may be sent again later (the handler
// answers 503 with Retry-After).
var ErrBusy = errors.New("the runner is busy")

// AddErr records err under path, spreading joined errors and field errors
// into separate details.
func (d *Problems) AddErr(path string, err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			d.AddErr(path, e)
		}
		return
	}
	// The adapters' own field errors carry the request path they found the
	// problem at, and messages already free of secrets.
	if fe, ok := err.(*protocol.Detail); ok {
		d.Addf(fe.Path, "%s", fe.Message)
		return
	}
	if inv, ok := err.(*protocol.Invalid); ok {
		d.inv.Merge(inv)
		return
	}
	d.Addf(path, "%v", err)
}

// Errors are the problems that refuse the request, in the order found.
func (d *Problems) Errors() []protocol.Detail { return d.inv.Details }

// Warnings are the problems that do not refuse the request (Validate
// shows them).
func (d *Problems) Warnings() []protocol.Detail { return d.warnings }

// Busy is the first check the runner could not make in time, or nil.
func (d *Problems) Busy() *protocol.Detail { return d.busy }

// Problems are reported at paths ("workflow.nodes[2].with.url"), in path
// order, with a "did you mean" where a member or value looks misspelt.

// SchemaErrors records why a schema did not compile, each problem at its
// place in the schema under path.
func SchemaErrors(path string, err error, d *Problems) {
	var errs schema.Errors
	if !errors.As(err, &errs) {
		d.Addf(path, "invalid JSON Schema: %v", err)
		return
	}
	for _, e := range errs {
		d.Addf(joinPath(path, e.Loc), "invalid JSON Schema: %s", e.Msg)
	}
}

// SchemaDetails checks v against sch and adds a detail under path for each
// failing leaf; it reports whether v is valid. A value or member that
// looks misspelt gets its "did you mean", within hints (a nil hints: each
// search bounded alone).
func SchemaDetails(path string, sch *schema.Schema, v any, d *Problems, hints *lang.Hints) bool {
	leaves := sch.Validate(v)
	if leaves == nil {
		return true
	}
	out := make([]schemaLeaf, len(leaves))
	for i, l := range leaves {
		out[i] = schemaLeaf{loc: joinPath(path, l.Loc), msg: l.Msg, members: l.Members, missing: l.Missing, near: leafNear(l, hints)}
	}
	reportLeaves(out, d)
	return false
}

// leafNear pairs what a leaf found with what was expected there, for the
// plausible typos among them: a string outside an enum, unexpected
// members against the declared ones.
func leafNear(l schema.Leaf, hints *lang.Hints) []nearMiss {
	if l.Known == nil {
		return nil
	}
	var known []string
	list := func() []string {
		if known == nil {
			known = l.Known()
		}
		return known
	}
	var near []nearMiss
	if l.Got != "" {
		if want := hints.Closest(l.Got, list); want != "" {
			near = append(near, nearMiss{got: l.Got, want: want})
		}
		return near
	}
	for _, m := range l.Members {
		switch found := hints.Closest(m, list); {
		case found == "":
		case l.Missing:
			near = append(near, nearMiss{got: found, want: m})
		default:
			near = append(near, nearMiss{got: m, want: found})
		}
	}
	return near
}

// reportLeaves adds leaves to d in path order, one message a place, and
// covers what they name: a missing or unknown member is reported at its
// object, but the later checks that would trip over it are those of the
// member, not of the whole object.
func reportLeaves(leaves []schemaLeaf, d *Problems) {
	// Stable: anyOf alternatives fail at the same place, and the first
	// one's message is kept. sort.SliceStable, not slices.SortStableFunc:
	// a refused document is no hot path, and slices.SortStableFunc would
	// compile its whole sort again for schemaLeaf's shape (about 5 kB of
	// the bootstrap).
	sort.SliceStable(leaves, func(i, j int) bool { return comparePaths(leaves[i].loc, leaves[j].loc) < 0 })
	for i, l := range leaves {
		if i > 0 && leaves[i-1].loc == l.loc {
			continue
		}
		var hint string
		if !l.missing {
			// One member or value misspelt: no need to say which.
			hint = nearHint(l.near, len(l.members) <= 1)
		} else {
			// An unknown member at the same place, kept quiet by this
			// message, may be the missing one misspelt.
			near := slices.Clip(l.near)
			for _, o := range leaves[i+1:] {
				if o.loc != l.loc {
					break
				}
				for _, n := range o.near {
					if slices.Contains(l.members, n.want) && !slices.Contains(near, n) {
						near = append(near, n)
					}
				}
			}
			hint = nearHint(near, false)
		}
		d.Addf(l.loc, "%s%s", l.msg, hint)
	}
	for _, l := range leaves {
		if l.members == nil {
			d.cover(l.loc)
			continue
		}
		for _, m := range l.members {
			d.cover(l.loc + "." + m)
		}
	}
}

// comparePaths orders paths as strings, but indexes by value: nodes[2]
// before nodes[10].
func comparePaths(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := i, j
			for ei < len(a) && isDigit(a[ei]) {
				ei++
			}
			for ej < len(b) && isDigit(b[ej]) {
				ej++
			}
			x, y := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if c := cmp.Compare(len(x), len(y)); c != 0 {
				return c
			}
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
			if c := cmp.Compare(ei-i, ej-j); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i++
		j++
	}
	return cmp.Compare(len(a)-i, len(b)-j)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// joinPath appends JSON pointer tokens to a dotted path: ["nodes","2","id"]
// becomes "workflow.nodes[2].id".
func joinPath(path string, tokens []string) string {
	var b strings.Builder
	b.WriteString(path)
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

// MaxListed is how many names ListHint lists: a message about one name
// not found, repeated by every node that names it, must not carry all the
// names a request holds (2,000 nodes naming a toolset missing from 2,000
// made a 48 MB response to a 253 KB request).
const MaxListed = 10

// ListHint returns ` (it has "a", "b")` naming what a lookup could have
// found, the first MaxListed of names and how many more, or
// ` (it is empty)`, for a message about a name not found.
func ListHint(names []string) string {
	switch {
	case len(names) == 0:
		return " (it is empty)"
	case len(names) > MaxListed:
		return " (it has " + JoinQuoted(names[:MaxListed]) + ", and " + strconv.Itoa(len(names)-MaxListed) + " more)"
	}
	return " (it has " + JoinQuoted(names) + ")"
}

// JoinQuoted lists names quoted as %q quotes them, comma separated.
func JoinQuoted(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// nearHint words near misses for a detail: ` (did you mean "with"?)` for
// the one unknown member of an additional-properties detail, else each
// with the member it stands for.
func nearHint(near []nearMiss, alone bool) string {
	if len(near) == 0 {
		return ""
	}
	if alone && len(near) == 1 {
		return fmt.Sprintf(" (did you mean %q?)", near[0].want)
	}
	var b strings.Builder
	b.WriteString(" (did you mean ")
	for i, n := range near {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q for %q", n.want, n.got)
	}
	b.WriteString("?)")
	return b.String()
}

// Input decodes a request's input and checks it against the document's
// input schema (nil: any value is accepted), each problem at its path
// under "input". It returns the decoded value, nil when it is not JSON.
func Input(raw json.RawMessage, sch *schema.Schema, d *Problems, hints *lang.Hints) any {
	var input any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &input); err != nil {
			d.Addf("input", "malformed JSON: %v", err)
			return nil
		}
	}
	if sch != nil {
		SchemaDetails("input", sch, input, d, hints)
	}
	return input
}
