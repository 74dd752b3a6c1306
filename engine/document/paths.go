package document

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/schema"
)

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
	// one's message is kept.
	slices.SortStableFunc(leaves, func(a, b schemaLeaf) int { return comparePaths(a.loc, b.loc) })
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
