package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
	"github.com/runnerd/lambda-runner/protocol/redact"
)

// Hostile redaction (issue 18, classes 6 to 8): what an execution learns
// into its redactor, what the redactor costs, what a secret's length
// changes and what an echo keeps of a secret. Helpers are prefixed redact.

// redactRun runs req on a fresh engine with limits and returns the NDJSON
// stream, the result's output and the execution (its scrubber).
func redactRun(t *testing.T, limits Limits, req string) (string, any, *Execution) {
	t.Helper()
	e := New(limits)
	t.Cleanup(e.WaitClosed)
	x := prepareReq(t, e, req)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	x.Run(ctx, protocol.NewWriter(&out, testExecutionID, nil))
	var output any
	for line := range strings.SplitSeq(out.String(), "\n") {
		var ev struct {
			Type   string `json:"type"`
			Output any    `json:"output"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "result" {
			output = ev.Output
		}
	}
	return out.String(), output, x
}

// redactReq is a request of one map over items whose http node sends
// headers to url (none of it reached: port 9 is blocked unless the policy
// allows private addresses) and returns each iteration's error code, with
// the secret k.
func redactReq(items, headers, url, secret string) string {
	return `{"version":1,"workflow":{"nodes":[{"id":"m","type":"map","with":{"items":` + items + `,"concurrency":1,
		"nodes":[{"id":"h","type":"http","onError":"continue","with":{"url":"` + url + `","headers":` + headers + `}}],
		"output":"${{ nodes.h.error.code ?? 'OK' }}"}}],"output":{"codes":"${{ join(map(nodes.m.output, # == 'LIMIT_EXCEEDED' ? 'L' : #[0:1]), '') }}"}},
		"runtime":{"http":{"secrets":{"k":` + jsonQuote(secret) + `}}}}`
}

// TestHostileLearnedValues: only what a secret decided is learned, as
// little as it decided, and within bounds that do not depend on the
// secret's length (issue 18, class 6: a header that merely mentioned
// "secrets" learned a 1 MB value per item, 31 s and 707 MB for 16).
func TestHostileLearnedValues(t *testing.T) {
	const secret = "some-secret-value"
	items := `[0,1,2,3,4,5,6,7]`
	for _, tt := range []struct {
		name    string
		headers string
		// maxLearned bounds how many values are learned and maxLen their
		// length; code is every iteration's first letter.
		maxLearned, maxLen int
		code               string
	}{
		{"a template whose text mentions secrets", `{"X-A":"${{ repeat('%', 100000) }}${{ item }} secrets"}`, 0, 0, "HHHHHHHH"},
		{"a string literal saying secrets", `{"X-A":"${{ repeat('%', 100000) + 'secrets' + string(item) }}"}`, 0, 0, "HHHHHHHH"},
		{"a value chosen over a secret by ??", `{"X-A":"${{ ('q' + string(item)) ?? secrets.k }}"}`, 0, 0, "HHHHHHHH"},
		{"a large constant before a secret", `{"X-A":"${{ repeat('%', 100000) + secrets.k + string(item) }}"}`, 0, 0, "HHHHHHHH"},
		{"a large constant before an encoded secret", `{"X-A":"${{ repeat('%', 100000) + toBase64(string(item) + secrets.k) }}"}`, 8, 40, "HHHHHHHH"},
		{"a large constant encoded after the secret", `{"X-A":"${{ toBase64(secrets.k + string(item) + repeat('%', 100000)) }}"}`, 8, 40, "HHHHHHHH"},
		{"a large constant encoded before the secret", `{"X-A":"${{ toBase64(repeat('%', 100000) + string(item) + secrets.k) }}"}`, 8, 40, "HHHHHHHH"},
		{"a large constant between two encoded secrets", `{"X-A":"${{ toBase64(secrets.k + repeat('%', 100000) + secrets.k + string(item)) }}"}`, 0, 0, "LLLLLLLL"},
		{"a Basic credential", `{"Authorization":"Basic ${{ toBase64('user' + string(item) + ':' + secrets.k) }}"}`, 8, 40, "HHHHHHHH"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, out, x := redactRun(t, DefaultLimits(), redactReq(items, tt.headers, "http://127.0.0.1:9/", secret))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if got := fmt.Sprint(out); got != "map[codes:"+tt.code+"]" {
				t.Errorf("output %s, want codes %s", got, tt.code)
			}
			learned := x.redact.Known()
			if n := len(learned.Values); n > tt.maxLearned {
				t.Errorf("%d values learned, want at most %d", n, tt.maxLearned)
			}
			for _, b := range learned.Values {
				v := string(b)
				if len(v) > tt.maxLen {
					t.Errorf("learned %d bytes (%.20q…), want at most %d", len(v), v, tt.maxLen)
				}
			}
		})
	}
}

// TestHostileSecretLength: nothing an author can observe depends on a
// secret's length (issue 18, class 7: a map whose http node doubled
// secrets.k + item 17 times tripped the memory budget exactly when
// (2^17-1)·(L+P) > 16 MiB, spelling L out with no request sent). Each
// shape pads a secret to about the expression memory budget, by a
// little less for each item: the codes must be the same for every
// secret length. Doubling through let names is refused before
// acceptance, naming the field.
func TestHostileSecretLength(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxExprMemory = 1 << 20
	// About 1 MiB, less 512 bytes per item.
	pad := `repeat(repeat('x', 64), 8192 - item*8)`
	items := `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]`
	lengths := []int{1, 17, 300, 2000, secrets.MaxSecretBytes}
	if raceDetector {
		lengths = []int{1, 300, secrets.MaxSecretBytes}
	}
	for _, tt := range []struct{ name, headers string }{
		{"padded", `{"X-A":"${{ ` + pad + ` + secrets.k }}"}`},
		{"padded, encoded", `{"X-A":"${{ toBase64(repeat(repeat('x', 64), 4096 - item*4) + secrets.k) }}"}`},
		{"padded, placed twice", `{"X-A":"${{ secrets.k + secrets.k + repeat(repeat('x', 64), 8120 - item*8) }}"}`},
		{"padded, in a query", `{}","query":{"q":"${{ ` + pad + ` + secrets.k }}"}, "x":"`},
		{"padded, in the body", `{}","body":{"b":"${{ ` + pad + ` + secrets.k }}"}, "x":"`},
		{"padded, through a let", `{"X-A":"${{ let s = secrets.k + string(item); ` + pad + ` + s }}"}`},
		{"padded, bearer", `{"Authorization":"Bearer ${{ secrets.k }}${{ ` + pad + ` }}"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			headers := tt.headers
			url := "http://127.0.0.1:9/"
			if strings.HasPrefix(headers, `{}",`) {
				// The field is another one: close headers, add it.
				headers = `{}` + strings.TrimPrefix(headers, `{}"`)
				headers = strings.TrimSuffix(headers, `, "x":"`)
			}
			var first string
			for _, n := range lengths {
				secret := strings.Repeat("~", n) // in no other text of the stream
				_, out, _ := redactRun(t, limits, redactReq(items, headers, url, secret))
				got := fmt.Sprint(out)
				if first == "" {
					first = got
					if !strings.Contains(got, "L") || !strings.Contains(got, "H") {
						t.Errorf("the budget is not crossed within the items: %s", got)
					}
					continue
				}
				if got != first {
					t.Fatalf("a %d-byte secret gives %s, a 1-byte one %s", n, got, first)
				}
			}
		})
	}
	t.Run("distinct values counted on their shadows", func(t *testing.T) {
		// The base64 of secret + item mixes the item's first bits into the
		// secret's last group or not, by the secret's length modulo 3:
		// counted on the values sent, the count (and whether the 33rd is
		// refused) would tell it.
		headers := `{"X-A":"${{ toBase64(secrets.k + item) }}","X-B":"${{ toBase64('a' + secrets.k + item) }}",
			"X-C":"${{ toBase64('b' + secrets.k + item) }}","X-D":"${{ toBase64('c' + secrets.k + item) }}"}`
		items := `[" ","0","@","P","` + "`" + `","p"," x","0x","@x","Px"]`
		var first string
		for _, n := range []int{1, 2, 3, 4, 5, 6, 100, 1000} {
			_, out, x := redactRun(t, DefaultLimits(), redactReq(items, headers, "http://127.0.0.1:9/", strings.Repeat("~", n)))
			used, _ := x.redact.Usage()
			got := fmt.Sprintf("%v, %d counted", out, used.Keys)
			if first == "" {
				first = got
				continue
			}
			if got != first {
				t.Fatalf("a %d-byte secret gives %s, a 1-byte one %s", n, got, first)
			}
		}
	})
	t.Run("doubling through let names is refused", func(t *testing.T) {
		e, _ := svcEngine(t, nil)
		for _, expr := range []string{
			`let s0 = secrets.k + item; let s1 = s0 + s0; let s2 = s1 + s1; s2`,
			`let s = secrets.k; [s, s]`,
			`let s = toBase64(secrets.k); s + ':' + s`,
			`let a = secrets.k; let b = a; b + a`,
		} {
			inv := prepareInvalid(t, e, redactReq(`["x"]`, `{"X-A":"${{ `+expr+` }}"}`, "http://127.0.0.1:9/", "k-secret-value"))
			wantProblems(t, inv.Details, []problem{{"workflow.nodes[0].with.nodes[0].with.headers.X-A", []string{"holds a secret, more than once", "docs/security.md"}}}, []string{"k-secret-value"})
		}
	})
	t.Run("a secret longer than the bound is refused", func(t *testing.T) {
		e, _ := svcEngine(t, nil)
		inv := prepareInvalid(t, e, redactReq(`["x"]`, `{"X-A":"${{ secrets.k }}"}`, "http://127.0.0.1:9/", strings.Repeat("s", secrets.MaxSecretBytes+1)))
		wantProblems(t, inv.Details, []problem{{"runtime.http.secrets.k", []string{"at most 4096 bytes"}}}, []string{"sssss"})
	})
}

// TestHostileEchoOverlap: a host bound to a secret echoes it back after
// values that overlap it were sent; no part of the secret may survive the
// scrubbing at the door (issue 18, class 8: a learned 'qT' made the echo
// of 'q' + secret "[REDACTED]opSecretValue123", and 32 learned values
// q+{a-z,0-5} told the secret's first character).
func TestHostileEchoOverlap(t *testing.T) {
	const secret = "TopSecretValue123"
	echo := newSvcEcho(t)
	// runtime binds each of secrets (name: value) to the echo server.
	runtime := func(secrets ...string) string {
		var b strings.Builder
		for i := 0; i < len(secrets); i += 2 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `%s:{"value":%s,"hosts":["127.0.0.1"]}`, jsonQuote(secrets[i]), jsonQuote(secrets[i+1]))
		}
		return `{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{` + b.String() + `}}}`
	}
	k := []string{"k", secret}
	node := func(id, needs, header string) string {
		n := `{"id":"` + id + `","type":"http","onError":"continue","with":{"url":"` + echo.URL + `/",
			"headers":{"X-A":` + jsonQuote(header) + `}}`
		if needs != "" {
			n += `,"needs":["` + needs + `"],"when":"true"`
		}
		return n + `}`
	}
	guesses := `{"id":"learn","type":"map","with":{"items":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u","v","w","x","y","z","0","1","2","3","4","5"],
		"concurrency":1,"nodes":[` + node("l", "", "${{ ('q' + item) ?? secrets.k }}") + `]}}`
	for _, tt := range []struct {
		name, learn, echo string
		secrets           []string
	}{
		{"a value chosen by ?? then the secret", node("learn", "", "${{ 'qT' ?? secrets.k }}"), "${{ 'q' + secrets.k }}", k},
		{"32 guesses then the secret", guesses, "${{ 'q' + secrets.k }}", k},
		{"32 guesses then the secret, upper-cased prefix", guesses, "${{ 'Q' + secrets.k }}", k},
		{"the secret's start then the secret", node("learn", "", "${{ 'qTop' + secrets.a }}"), "${{ 'q' + secrets.k }}", append([]string{"a", "Secret"}, k...)},
		{"two secrets overlapping in one echo", node("learn", "", "${{ secrets.a }}"), "${{ secrets.a + 'Value123' }}", []string{"a", "TopSecret", "b", "SecretValue123"}},
		{"two overlapping secrets, the other way", node("learn", "", "x"), "${{ 'Top' + secrets.b }}", []string{"a", "TopSecret", "b", "SecretValue123"}},
		{"a Basic credential, then the secret", node("learn", "", "Basic ${{ toBase64('qT:' + secrets.k) }}"), "${{ 'qT:' + secrets.k }}", k},
		{"an encoded value overlapping the secret's encoding", node("learn", "", "${{ toBase64('q' + secrets.k) }}"), "${{ toBase64(secrets.k) + toBase64('q' + secrets.k) }}", k},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := `{"version":1,"workflow":{"nodes":[` + tt.learn + `,` + node("echo", "learn", tt.echo) + `],
				"output":{"echoed":"${{ nodes.echo.output.body.headers['X-A'] }}"}},"runtime":` + runtime(tt.secrets...) + `}`
			stream, out, _ := redactRun(t, DefaultLimits(), req)
			if !strings.Contains(fmt.Sprint(out), redact.Marker) {
				t.Fatalf("the echo was not redacted: %v\n%s", out, stream)
			}
			// No six bytes of any secret, nor of its base64.
			for _, s := range []string{secret, "SecretValue123", base64Std(secret), base64Std("q" + secret), base64Std("qT:" + secret)} {
				for i := 0; i+6 <= len(s); i++ {
					if part := s[i : i+6]; strings.Contains(stream, part) {
						t.Fatalf("the stream holds %q of %q: %v", part, s, out)
					}
				}
			}
		})
	}
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
