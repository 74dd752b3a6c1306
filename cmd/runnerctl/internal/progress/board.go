// Package progress shows an execution's events as one line per node, map
// items and child workflow nodes nested under their parent, redrawn in
// place on a terminal.
package progress

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runnerd/lambda-runner/protocol"
)

// State is where a node stands.
type State string

// The states a node goes through.
const (
	Waiting   State = "waiting"
	Running   State = "running"
	Completed State = "completed"
	Failed    State = "failed"
	Skipped   State = "skipped"
	Suspended State = "suspended"
)

var icons = map[State]string{
	Waiting: "·", Running: "…", Completed: "✓", Failed: "✗", Skipped: "-", Suspended: "⏸",
}

// Node is one line of the board.
type Node struct {
	ID       string
	Type     string
	State    State
	Attempt  int
	Started  time.Time
	Duration time.Duration
	// Detail is the failure or suspension, for people.
	Detail string
	// Error is the failure of the node's last attempt, when it failed.
	Error protocol.NodeError
	// Role is the model role the node asked for and the one it used, when
	// the table had no such role and it fell back to general.
	Role *protocol.RoleFallback
	// Decisions are the permission decisions made for the node.
	Decisions []string

	label    string
	group    bool // a map item: a heading, not a node
	children []*Node
}

// Board is the state of every node seen so far. The zero value is empty and
// ready; Now defaults to time.Now.
type Board struct {
	Now func() time.Time

	top  []*Node
	byID map[string]*Node
}

// Expect lists top-level nodes, in document order, before their events
// arrive: they show as waiting.
func (b *Board) Expect(id, typ string) {
	n := b.node(id)
	if n.Type == "" {
		n.Type = typ
	}
}

func (b *Board) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// parent splits a nested node id: "each[3].tag" is "tag" under "each[3]",
// "each[3]" is item "[3]" under "each", "review.lint" is "lint" under
// "review".
func parent(id string) (parentID, label string) {
	if strings.HasSuffix(id, "]") {
		if i := strings.LastIndexByte(id, '['); i > 0 {
			return id[:i], id[i:]
		}
	}
	if i := strings.LastIndexByte(id, '.'); i > 0 {
		return id[:i], id[i+1:]
	}
	return "", id
}

// node returns the node with id, creating it and its ancestors.
func (b *Board) node(id string) *Node {
	if b.byID == nil {
		b.byID = map[string]*Node{}
	}
	if n, ok := b.byID[id]; ok {
		return n
	}
	pid, label := parent(id)
	n := &Node{ID: id, label: label, State: Waiting, group: strings.HasPrefix(label, "[")}
	b.byID[id] = n
	if pid == "" {
		b.top = append(b.top, n)
	} else {
		p := b.node(pid)
		p.children = insert(p.children, n)
	}
	return n
}

// insert adds n to a node's children: map items in index order, whatever
// order their first events came in (concurrent items start in any order),
// every other child after those already there.
func insert(children []*Node, n *Node) []*Node {
	i, ok := itemIndex(n)
	if !ok {
		return append(children, n)
	}
	at := len(children)
	for k, c := range children {
		if j, isItem := itemIndex(c); isItem && j > i {
			at = k
			break
		}
	}
	return slices.Insert(children, at, n)
}

// itemIndex is the index of a map item's heading ("[12]").
func itemIndex(n *Node) (int, bool) {
	if !n.group {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(n.label, "["), "]"))
	return i, err == nil
}

// Apply records one event.
func (b *Board) Apply(ev protocol.Event) {
	switch e := ev.(type) {
	case *protocol.NodeStarted:
		n := b.node(e.NodeID)
		n.Type, n.State, n.Attempt, n.Started, n.Detail = e.NodeType, Running, e.Attempt, b.now(), ""
		n.Error = protocol.NodeError{}
		if e.Role != nil {
			n.Role = e.Role
		}
	case *protocol.NodeCompleted:
		n := b.node(e.NodeID)
		n.Type, n.State, n.Attempt = e.NodeType, Completed, e.Attempt
		n.Duration = time.Duration(e.DurationMs) * time.Millisecond
	case *protocol.NodeFailed:
		n := b.node(e.NodeID)
		n.Type, n.Attempt = e.NodeType, e.Attempt
		n.Duration = time.Duration(e.DurationMs) * time.Millisecond
		n.Detail = fmt.Sprintf("%s: %s", e.Error.Code, e.Error.Message)
		n.Error = e.Error
		n.State = Failed
		if e.Retrying {
			n.State = Waiting
			n.Detail = "retrying after " + n.Detail
		}
	case *protocol.NodeSuspended:
		n := b.node(e.NodeID)
		n.Type, n.State = e.NodeType, Suspended
		n.Detail = fmt.Sprintf("needs %s: %s %s", e.Reason, e.Request.Action, e.Request.Resource)
	case *protocol.PermissionDecision:
		n := b.node(e.NodeID)
		n.Decisions = append(n.Decisions, fmt.Sprintf("%s %s %s: %s", e.Decision, e.Action, e.Resource, e.Source))
	}
}

// Finish marks the nodes that never ran as skipped, once the terminal event
// has arrived.
func (b *Board) Finish() {
	for _, n := range b.byID {
		if n.State == Waiting && !n.group {
			n.State = Skipped
		}
		if n.State == Running {
			n.State = Failed
			n.Detail = "ended with the execution"
			n.Error = protocol.NodeError{Message: n.Detail}
		}
	}
}

// Failure is a node whose last attempt failed.
type Failure struct {
	// ID is the node's full id: "each[3].fetch" names the map item.
	ID, Type string
	Error    protocol.NodeError
}

// Failures lists the nodes that failed for good (no attempt followed), in
// the board's order: map items in index order under their map.
func (b *Board) Failures() []Failure {
	var out []Failure
	var walk func(ns []*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			if n.State == Failed {
				out = append(out, Failure{ID: n.ID, Type: n.Type, Error: n.Error})
			}
			walk(n.children)
		}
	}
	walk(b.top)
	return out
}

// Summary renders the failures for the end of a run, whole: each wrapped to
// width columns (0: no wrapping) under a heading, none cut.
func (b *Board) Summary(width int) []string {
	fs := b.Failures()
	if len(fs) == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("%d failed:", len(fs))}
	for _, f := range fs {
		var s strings.Builder
		s.WriteString(f.ID)
		if f.Type != "" {
			fmt.Fprintf(&s, " (%s)", f.Type)
		}
		s.WriteString(": ")
		if f.Error.Code != "" {
			fmt.Fprintf(&s, "%s: ", f.Error.Code)
		}
		s.WriteString(f.Error.Message)
		out = append(out, Wrap(Clean(s.String()), width, "  ", "      ")...)
	}
	return out
}

// Wrap breaks s into lines of at most width columns (one rune is taken as
// one column), at spaces where it can and inside a word too long for a
// line: first begins the first line, indent every other. A width too small
// for the indents leaves s on one line.
func Wrap(s string, width int, first, indent string) []string {
	if width <= 0 || width <= utf8.RuneCountInString(indent)+1 || width <= utf8.RuneCountInString(first)+1 {
		return []string{first + s}
	}
	var out []string
	prefix := first
	words := strings.Fields(s)
	line := []rune(prefix)
	fresh := true // nothing but the prefix on line yet
	for _, w := range words {
		word := []rune(w)
		if !fresh && len(line)+1+len(word) > width {
			out = append(out, string(line))
			prefix = indent
			line, fresh = []rune(prefix), true
		}
		if !fresh {
			line = append(line, ' ')
		}
		for len(line)+len(word) > width {
			room := width - len(line)
			line = append(line, word[:room]...)
			out = append(out, string(line))
			word = word[room:]
			prefix = indent
			line = []rune(prefix)
		}
		line = append(line, word...)
		fresh = false
	}
	return append(out, string(line))
}

// Lines renders the board, one line per node and permission decision.
func (b *Board) Lines() []string {
	var out []string
	now := b.now()
	var walk func(ns []*Node, depth int)
	walk = func(ns []*Node, depth int) {
		for _, n := range ns {
			out = append(out, n.line(depth, now))
			for _, d := range n.Decisions {
				out = append(out, strings.Repeat("  ", depth+2)+"permission "+Clean(d))
			}
			walk(n.children, depth+1)
		}
	}
	walk(b.top, 0)
	return out
}

func (n *Node) line(depth int, now time.Time) string {
	indent := strings.Repeat("  ", depth)
	if n.group {
		return indent + Clean(n.label)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s %s", indent, icons[n.State], n.label)
	if n.Type != "" {
		fmt.Fprintf(&b, " (%s)", n.Type)
	}
	b.WriteString(" " + string(n.State))
	if n.Attempt > 0 {
		fmt.Fprintf(&b, " · attempt %d", n.Attempt)
	}
	switch {
	case n.State == Running:
		b.WriteString(" · " + Duration(now.Sub(n.Started)))
	case n.State == Completed || n.State == Failed:
		b.WriteString(" · " + Millis(n.Duration.Milliseconds()))
	}
	if n.Role != nil {
		fmt.Fprintf(&b, " · role %s → %s", n.Role.Requested, n.Role.Used)
	}
	if n.Detail != "" {
		b.WriteString(" · " + n.Detail)
	}
	return Clean(b.String())
}

// Clean drops control characters, so that text from a runner (node ids,
// error messages) cannot move the cursor or restyle the terminal.
func Clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return -1
		}
		return r
	}, s)
}

// Millis shows a duration from an event (durationMs): the protocol counts
// whole milliseconds, so 0 is "<1 ms".
func Millis(ms int64) string {
	if ms == 0 {
		return "<1 ms"
	}
	return Duration(time.Duration(ms) * time.Millisecond)
}

// Duration shows d for people, to a sensible precision: "0.4 ms",
// "12 ms", "1.5 s", "2m5s". Go's own rounding to the millisecond would
// show a quick node as "0s".
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0 ms"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	case d < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return d.Round(time.Second).String()
}
