package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// Round 21: a 400 in proportion to the request. Every detail's path
// repeats the keys above its problem and a message may quote what the
// request holds: one 2 MB key over 300 invalid expressions made a 602 MB
// body (2.1 GB of RSS) from a 2 MB request. However the problems multiply
// (long keys, keys nested deep, problems by the thousand, long quoted
// texts), the 400 stays within a few MB, lists the first problems with
// their paths and counts the rest.
func TestHostileInvalidBody(t *testing.T) {
	rep := strings.Repeat
	invalid := func(n int) string { return strings.TrimSuffix(rep(`"${{ ( }}",`, n), ",") }
	deepKeys := func(levels, keyLen, n int) string {
		var b strings.Builder
		for i := range levels {
			fmt.Fprintf(&b, `{"%s%d":`, rep("k", keyLen), i)
		}
		b.WriteString("[" + invalid(n) + "]")
		b.WriteString(rep("}", levels))
		return b.String()
	}
	nodes := func(n int, node func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(node(i))
		}
		return b.String()
	}
	set := func(value string) string {
		return `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":` + value + `}}]}}`
	}
	tests := []struct {
		name, body string
	}{
		{"one 2 MB key over 300 problems", set(`{"` + rep("k", 2<<20) + `":[` + invalid(300) + `]}`)},
		{"one 1 MB key over 3,000 problems", set(`{"` + rep("k", 1<<20) + `":[` + invalid(3000) + `]}`)},
		{"keys of 32 KB nested 100 deep over 300 problems", set(deepKeys(100, 32<<10, 300))},
		{"20,000 problems", set("[" + invalid(20000) + "]")},
		{"50,000 unknown needs", `{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","needs":[` +
			nodes(50000, func(i int) string { return fmt.Sprintf(`"nope%d"`, i) }) + `]}]}}`},
		{"long texts quoted in 300 messages", `{"version":1,"workflow":{"nodes":[` + nodes(300, func(i int) string {
			return fmt.Sprintf(`{"id":"n%d","type":"set","with":{"value":"${{ nodes.%s.output }}"}}`, i, rep("x", 16<<10))
		}) + `]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(DefaultLimits())
			var err error
			start := time.Now()
			peak := heapPeak(func() {
				var x *Execution
				x, err = e.PrepareBody([]byte(tt.body))
				x.discard()
			})
			took := time.Since(start)
			var inv *protocol.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want a 400", err)
			}
			out, _ := json.Marshal(inv.Response())
			t.Logf("%d bytes: %d details and %d more, a 400 of %d bytes, in %v, heap peak +%d MiB",
				len(tt.body), len(inv.Details), inv.More(), len(out), took, peak>>20)
			if len(out) > 6<<20 {
				t.Errorf("a 400 of %d bytes from a body of %d", len(out), len(tt.body))
			}
			if peak > 200<<20 {
				t.Errorf("the heap peaked %d MiB above its start", peak>>20)
			}
			if took > costSlack(3*time.Second) {
				t.Errorf("refused in %v", took)
			}
			for _, d := range inv.Details {
				if len(d.Path) > protocol.MaxDetailPath || len(d.Message) > protocol.MaxDetailMessage {
					t.Fatalf("a detail of %d and %d bytes: %.200s", len(d.Path), len(d.Message), d.Path)
				}
			}
			if inv.More() > 0 {
				ds := inv.Response().Error.Details
				if last := ds[len(ds)-1]; !strings.Contains(last.Message, fmt.Sprintf("and %d more problems", inv.More())) {
					t.Errorf("the last detail %q does not count the rest", last.Message)
				}
			}
		})
	}
}

// Round 21: children that are small each but too many together are told
// so once, at the child that crossed maxNodes, not each called too large.
func TestMaxNodesAcrossChildren(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":1}}]},"runtime":{"workflows":[`)
	for i := range 3000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"w%d","nodes":[{"id":"a","type":"set"},{"id":"b","type":"set"},{"id":"c","type":"set"},{"id":"d","type":"set"}]}`, i)
	}
	b.WriteString(`]}}`)
	_, err := New(DefaultLimits()).PrepareBody([]byte(b.String()))
	var inv *protocol.Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("got %v, want a 400", err)
	}
	n := 0
	for _, d := range inv.Details {
		if strings.Contains(d.Message, "maxNodes") {
			n++
			if !strings.Contains(d.Message, "together") {
				t.Errorf("%s: %s", d.Path, d.Message)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d details name maxNodes, want 1: %.300v", n, inv.Details)
	}
}
