//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 45's classes against the runner as it is deployed outside Lambda:
// the built bootstrap as a local service at RUNNER_MEMORY_MB=512, with a
// static token, its code worker and credentials of its own in its
// environment, each class driven with payloads other than the issue's.
// What the in-process tests cannot see is measured here: the peak resident
// memory of the runner process and of its sandbox workers together, from
// /proc; the time from a request's start to its terminal event against its
// execution's deadline; and every byte the runner writes, to its client,
// its log and the hosts a request names, searched for every form of every
// credential it holds. Helpers are prefixed hp.

const (
	// hpMemoryMB is RUNNER_MEMORY_MB: the runner and its workers together
	// stay under it.
	hpMemoryMB = 512
	// hpReserve is RUNNER_RESERVE_MS's default: an execution's work stops
	// that long before its end (RUNNER_TIMEOUT_SECONDS after it starts),
	// which is its deadline; the terminal event goes out in the reserve.
	hpReserve = 500 * time.Millisecond
	// hpSlack is the room past the deadline the terminal event may take
	// (issue 45: deadline + 0.5 s, the reserve).
	hpSlack = 500 * time.Millisecond
	// hpSample is how often /proc is read for the workers' memory.
	hpSample = 10 * time.Millisecond
)

// hpAmbient are credentials the runner holds of its own, in its
// environment; with the bearer token of its clients (testToken) none may
// reach a host a request names, an event, an error or a log line, in any
// form.
var hpAmbient = map[string]string{
	"AWS_ACCESS_KEY_ID":        "AKIDHOSTILEPROCESS45",
	"AWS_SECRET_ACCESS_KEY":    "hp-role-secret/Access+Key=45",
	"AWS_SESSION_TOKEN":        "hp-role-session-token-IQoJb3JpZ2luX2Vj45",
	"AWS_BEARER_TOKEN_BEDROCK": "hp-ambient-bedrock-bearer-45",
	"OPENAI_API_KEY":           "sk-hp-ambient-openai-key-45",
	"ANTHROPIC_API_KEY":        "sk-ant-hp-ambient-key-45",
	"ANTHROPIC_AUTH_TOKEN":     "hp-ambient-anthropic-token-45",
}

// hpHeld are the runner's own credentials: hpAmbient's and the token its
// clients present.
func hpHeld() map[string]string {
	held := maps.Clone(hpAmbient)
	held["RUNNER_TOKENS"] = testToken
	return held
}

// hpForms are the forms in which a value could travel: as it is, cased,
// URL-escaped, hex in either case, and base64 in either alphabet — the
// characters the value alone decides, at each of the three offsets its
// first byte may fall on inside a longer encoded text (offset 0 is the
// value's own base64, padded or not, less its last, partial character).
func hpForms(v string) []string {
	h := hex.EncodeToString([]byte(v))
	out := []string{v, strings.ToLower(v), strings.ToUpper(v), url.QueryEscape(v), url.PathEscape(v), h, strings.ToUpper(h)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for off := range 3 {
			b := enc.EncodeToString(append(make([]byte, off), v...))
			// Character k holds bits 6k to 6k+6: those wholly within the
			// value's bits, 8*off to 8*(off+len(v)).
			out = append(out, b[(8*off+5)/6:8*(off+len(v))/6])
		}
	}
	return out
}

// hpNoLeak fails for each form of each of secrets found in text.
func hpNoLeak(t *testing.T, where string, text []byte, secrets map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		for i, f := range hpForms(secrets[name]) {
			if at := bytes.Index(text, []byte(f)); at >= 0 {
				t.Errorf("%s holds %s (form %d, %q) at byte %d: …%s…", where, name, i, f, at, text[max(0, at-80):min(len(text), at+len(f)+80)])
			}
		}
	}
}

// hpRunner is the built runner serving as a local service, and what is
// measured of it.
type hpRunner struct {
	*svcProcess
	timeout time.Duration // RUNNER_TIMEOUT_SECONDS: an execution's end
	mon     *hpMonitor
	client  *http.Client
}

// hpStart starts the runner at RUNNER_MEMORY_MB=512 with every credential
// of hpAmbient in its environment and executions ending timeout seconds
// after they start, and starts measuring it.
func hpStart(t *testing.T, timeout int, extra map[string]string) *hpRunner {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		"RUNNER_MEMORY_MB":        strconv.Itoa(hpMemoryMB),
		"RUNNER_TIMEOUT_SECONDS":  strconv.Itoa(timeout),
		"RUNNER_HTTP_ALLOW_CIDRS": "127.0.0.1/32",
		// A hermetic AWS configuration: the credentials are hpAmbient's.
		"AWS_REGION":                  "eu-west-1",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "no-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-credentials"),
	}
	maps.Copy(env, hpAmbient)
	maps.Copy(env, extra)
	p := svcStart(t, env)
	r := &hpRunner{svcProcess: p, timeout: time.Duration(timeout) * time.Second,
		client: &http.Client{Transport: &http.Transport{ExpectContinueTimeout: runPatience}}}
	r.mon = hpWatch(p.cmd.Process.Pid)
	t.Cleanup(func() {
		r.mon.stop()
		r.client.CloseIdleConnections()
	})
	return r
}

// hpMonitor samples, every hpSample, the memory of the runner and of its
// child processes (the sandbox workers).
type hpMonitor struct {
	pid  int
	quit chan struct{}
	done chan struct{}
	once sync.Once

	// Written by the sampler, read once it is done.
	workers  int64 // the most, at one sample, of the live workers' VmHWM together
	together int64 // the most, at one sample, of the runner's VmRSS and the workers'
	seen     map[int]bool
}

func hpWatch(pid int) *hpMonitor {
	m := &hpMonitor{pid: pid, quit: make(chan struct{}), done: make(chan struct{}), seen: map[int]bool{}}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(hpSample)
		defer tick.Stop()
		for {
			m.sample()
			select {
			case <-m.quit:
				m.sample()
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

func (m *hpMonitor) stop() {
	m.once.Do(func() { close(m.quit) })
	<-m.done
}

// sample adds one reading. A worker's VmHWM is its own peak since it
// started, so the sum over the workers alive at once bounds what they held
// together between two samples too (a worker that starts and dies between
// two samples is missed).
func (m *hpMonitor) sample() {
	rss, _ := hpStatus(m.pid)
	var hwm int64
	for _, c := range hpChildren(m.pid) {
		r, h := hpStatus(c)
		if h == 0 {
			continue // gone meanwhile
		}
		m.seen[c] = true
		hwm += h
		rss += r
	}
	m.workers = max(m.workers, hwm)
	m.together = max(m.together, rss)
}

// hpStatus returns a process's VmRSS and VmHWM in bytes, 0 when it is gone.
func hpStatus(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// hpChildren returns the pids of a process's children.
func hpChildren(pid int) []int {
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for s := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// hpOutcome is one request and what came of it.
type hpOutcome struct {
	name   string
	status int
	header http.Header
	body   []byte           // the whole response body
	events []map[string]any // a stream's events
	// From the request's start: when the terminal event arrived, and the
	// execution's deadline (its acceptance plus RUNNER_TIMEOUT_SECONDS
	// less the reserve). 0 when there was none.
	terminal, deadline time.Duration
	accepted           time.Duration // when the accepted event arrived
	took               time.Duration // to the response's end
	// note, when set, describes a request whose stream is not read as
	// usual (a slow reader's): finish checks no more than its bytes.
	note string
}

// post sends an execution, reads its whole response as it arrives and
// returns what came of it.
func (r *hpRunner) post(t *testing.T, name, body string) *hpOutcome {
	t.Helper()
	return r.postWatch(t, name, body, nil)
}

// postWatch is post, calling watch (when not nil) with each event as it
// arrives. It may run on a goroutine of the test's.
func (r *hpRunner) postWatch(t *testing.T, name, body string, watch func(ev map[string]any)) *hpOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), runPatience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/executions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	// A refusal before the body is read (503) arrives before the body
	// is sent, rather than as a reset connection.
	req.Header.Set("Expect", "100-continue")
	o := &hpOutcome{name: name}
	start := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		o.took = time.Since(start)
		return o
	}
	defer resp.Body.Close()
	o.status, o.header = resp.StatusCode, resp.Header
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		o.body = append(o.body, line...)
		if o.status == http.StatusOK && len(bytes.TrimSpace(line)) > 0 {
			var ev map[string]any
			if json.Unmarshal(line, &ev) == nil {
				o.events = append(o.events, ev)
				switch ev["type"] {
				case "accepted":
					o.accepted, o.deadline = time.Since(start), r.deadlineOf(ev, start)
				case "result", "error":
					o.terminal = time.Since(start)
				}
				if watch != nil {
					watch(ev)
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				t.Errorf("%s: reading the response: %v", name, err)
			}
			break
		}
	}
	o.took = time.Since(start)
	return o
}

// deadlineOf returns, from start, the deadline of the execution whose
// accepted event is acc: its work stops at RUNNER_TIMEOUT_SECONDS less
// the reserve after it was accepted (the runner's clock is this one).
func (r *hpRunner) deadlineOf(acc map[string]any, start time.Time) time.Duration {
	s, _ := acc["at"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	// "at" has milliseconds: the execution began up to 1 ms earlier.
	return at.Add(-time.Millisecond).Add(r.timeout - hpReserve).Sub(start)
}

// nodeFailures returns each node.failed event's error by node id.
func (o *hpOutcome) nodeFailures() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, ev := range o.events {
		if ev["type"] == "node.failed" {
			e, _ := ev["error"].(map[string]any)
			out[fmt.Sprint(ev["nodeId"])] = e
		}
	}
	return out
}

// terminalEvent returns the stream's terminal event (nil when none).
func (o *hpOutcome) terminalEvent() map[string]any {
	if n := len(o.events); n > 0 && (o.events[n-1]["type"] == "result" || o.events[n-1]["type"] == "error") {
		return o.events[n-1]
	}
	return nil
}

// String describes the outcome for a row's log line.
func (o *hpOutcome) String() string {
	if o.note != "" {
		return o.name + ": " + o.note
	}
	if o.status != http.StatusOK {
		return fmt.Sprintf("%s: %d in %.2fs", o.name, o.status, o.took.Seconds())
	}
	return fmt.Sprintf("%s: terminal at %.2fs, deadline %.2fs", o.name, o.terminal.Seconds(), o.deadline.Seconds())
}

// finish stops measuring r and checks what every row must hold: the
// runner and its workers under RUNNER_MEMORY_MB together (the runner's
// VmHWM plus the most its workers' VmHWM came to at once: at least their
// peak together); every execution's stream well formed, with exactly one
// terminal event, by its deadline and the half second after it; and no
// form of a credential the runner holds (or of secrets, the row's own) in
// any response or in the runner's log.
func (r *hpRunner) finish(t *testing.T, secrets map[string]string, outs ...*hpOutcome) {
	t.Helper()
	r.mon.stop()
	_, runner := hpStatus(r.cmd.Process.Pid)
	if runner == 0 {
		t.Fatalf("the runner is gone:\n%s", r.out)
	}
	all := hpHeld()
	maps.Copy(all, secrets)
	var lines []string
	for _, o := range outs {
		lines = append(lines, o.String())
		hpNoLeak(t, o.name+": the response", o.body, all)
		if o.status != http.StatusOK || o.note != "" {
			continue
		}
		hpCheckStream(t, o.name, o.body)
		if o.deadline == 0 {
			t.Errorf("%s: no accepted event to time the deadline from", o.name)
		} else if o.terminal > o.deadline+hpSlack {
			t.Errorf("%s: the terminal event came %.2fs after the request started, past its deadline (%.2fs) and %v",
				o.name, o.terminal.Seconds(), o.deadline.Seconds(), hpSlack)
		}
	}
	hpNoLeak(t, "the runner's log", []byte(r.out.String()), all)
	sum := runner + r.mon.workers
	t.Logf("peak RSS: runner %d MiB, workers %d MiB (%d seen), sum %d MiB (sampled at once %d MiB) of %d MB; %s",
		runner>>20, r.mon.workers>>20, len(r.mon.seen), sum>>20, r.mon.together>>20, hpMemoryMB, strings.Join(lines, "; "))
	if sum > hpMemoryMB<<20 {
		t.Errorf("the runner (%d MiB at its peak) and its workers (%d MiB at theirs) together held %d MiB, over RUNNER_MEMORY_MB=%d",
			runner>>20, r.mon.workers>>20, sum>>20, hpMemoryMB)
	}
}

// hpCheckStream holds a stream to checkStream's rules — each line an
// event of version 1 with a type, an executionId (the stream's) and a
// time; accepted first; exactly one terminal event, last — reading only
// the head of each line (hpHead): a result of megabytes decoded again
// under the race detector took seconds.
func hpCheckStream(t *testing.T, name string, body []byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	terminals := 0
	var id any
	for i, l := range lines {
		h, err := hpHead(l)
		if err != nil {
			t.Errorf("%s: line %d is not a JSON object (%v): %.200q", name, i+1, err, l)
			return
		}
		if h["version"] != float64(1) || h["type"] == nil || h["executionId"] == nil || h["at"] == nil {
			t.Errorf("%s: line %d lacks version 1, type, executionId or at: %.300s", name, i+1, l)
		}
		if i == 0 {
			id = h["executionId"]
			if h["type"] != "accepted" {
				t.Errorf("%s: the first event is %v, want accepted", name, h["type"])
			}
		} else if h["executionId"] != id {
			t.Errorf("%s: line %d: executionId %v, the stream's is %v", name, i+1, h["executionId"], id)
		}
		if h["type"] == "result" || h["type"] == "error" {
			terminals++
			if i != len(lines)-1 {
				t.Errorf("%s: terminal event on line %d of %d", name, i+1, len(lines))
			}
		}
	}
	if terminals != 1 {
		t.Errorf("%s: %d terminal events, want exactly 1", name, terminals)
	}
}

// hpHead decodes an event line's members until it has its version, type,
// executionId and time, which the runner writes first.
func hpHead(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("no object: %v", err)
	}
	head := map[string]any{}
	for dec.More() && len(head) < 4 {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		switch k {
		case "version", "type", "executionId", "at":
			head[k.(string)] = v
		}
	}
	return head, nil
}

// hpRecorder is a host a request names: it keeps every byte of every
// request it is sent (request line, headers, body) and answers as answer
// does (a 400 with a JSON error by default).
type hpRecorder struct {
	*httptest.Server
	mu     sync.Mutex
	raw    [][]byte
	paths  []string
	answer func(w http.ResponseWriter, r *http.Request, body []byte)
}

func hpRecord(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *hpRecorder {
	return hpRecordOn(t, false, answer)
}

// hpRecordTLS is hpRecord over TLS (a bearer token goes only over TLS),
// with the file of its certificate for the runner's SSL_CERT_FILE.
func hpRecordTLS(t *testing.T) (*hpRecorder, string) {
	rec := hpRecordOn(t, true, nil)
	pemFile := filepath.Join(t.TempDir(), "cert.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rec.Certificate().Raw})
	if err := os.WriteFile(pemFile, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return rec, pemFile
}

func hpRecordOn(t *testing.T, tls bool, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *hpRecorder {
	rec := &hpRecorder{answer: answer, Server: httptest.NewUnstartedServer(nil)}
	rec.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s %s\n", req.Method, req.RequestURI, req.Proto)
		_ = req.Header.Write(&b)
		body, _ := io.ReadAll(req.Body)
		b.Write(body)
		rec.mu.Lock()
		rec.raw = append(rec.raw, b.Bytes())
		rec.paths = append(rec.paths, req.URL.Path)
		rec.mu.Unlock()
		if rec.answer != nil {
			rec.answer(w, req, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"refused by the test's host","type":"invalid_request_error"},"message":"refused by the test's host"}`)
	})
	if tls {
		rec.StartTLS()
	} else {
		rec.Start()
	}
	t.Cleanup(func() {
		rec.CloseClientConnections()
		rec.Close()
	})
	return rec
}

// requests returns the raw requests received, and their paths.
func (rec *hpRecorder) requests() ([][]byte, []string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.raw), slices.Clone(rec.paths)
}

// hpDoc is an execution request of nodes (JSON texts), with more fields
// of the request (JSON members) after the workflow.
func hpDoc(nodes []string, more ...string) string {
	return `{"version":1,"workflow":{"nodes":[` + strings.Join(nodes, ",") + `]}` + strings.Join(append([]string{""}, more...), ",") + `}`
}

// hpString is s as a JSON string: as it is, in quotes, when nothing in
// it needs escaping (under the race detector json.Marshal takes a second
// over the megabytes of code bodies a row sends).
func hpString(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r == 0x2028 || r == 0x2029 }) {
		return `"` + s + `"`
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// hpAmpTimeout is the encoding rows' RUNNER_TIMEOUT_SECONDS: each node is
// refused well within it, by a bound of its own, however loaded the
// machine (sizing what a node would write walks megabytes).
const hpAmpTimeout = 6

// hpAmpChars are characters that JSON or URL encoding makes longer than
// they are, none of them the "<": an author who builds a 4 MB
// string of one of them from a one-character input asks for up to 24 MB
// per reference to it.
var hpAmpChars = []struct{ name, char string }{
	{"ctl", "\x01"}, {"quote", `"`}, {"backslash", `\`}, {"ls", "\u2028"}, {"amp", "&"}, {"gt", ">"}, {"tab", "\t"},
}

// hpAmpSource is a set node "s_<name>" whose output is 4 MB of char (3 MB
// of U+2028, three bytes each), built from the one character of the
// request's input.
func hpAmpSource(name, char string) string {
	return fmt.Sprintf(`{"id":"s_%s","type":"set","with":{"value":"${{ repeat(repeat(input.%s, 1000000), %d) }}"}}`, name, name, 4_000_000/len(char)/1_000_000)
}

// hpAmpInput is the request's input: each of hpAmpChars by its name.
func hpAmpInput() string {
	m := map[string]string{}
	for _, c := range hpAmpChars {
		m[c.name] = c.char
	}
	b, _ := json.Marshal(m)
	return `"input":` + string(b)
}

// hpRefusedInBand checks that each of nodes failed in-band with a bound
// named in its node.failed event: LIMIT_EXCEEDED or OUTPUT_TOO_LARGE, or
// MEMORY_BUDGET_EXCEEDED, which is what charging the bytes to the budget
// before they are allocated refuses with (engine/encode.go) — never a
// crash, an internal error or the deadline.
func hpRefusedInBand(t *testing.T, o *hpOutcome, nodes ...string) {
	t.Helper()
	failed := o.nodeFailures()
	for _, id := range nodes {
		e := failed[id]
		switch code, _ := e["code"].(string); code {
		case "LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE", "MEMORY_BUDGET_EXCEEDED":
		default:
			t.Errorf("%s: node %s ended %v, want it refused in-band (LIMIT_EXCEEDED, OUTPUT_TOO_LARGE or MEMORY_BUDGET_EXCEEDED)", o.name, id, e)
		}
	}
}

func TestHostileProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built runner through every class of issue 45: about 45 s")
	}
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skipf("needs /proc to measure the runner and its workers: %v", err)
	}
	for _, row := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"1 ambient credentials", hpAmbientCredentials},
		{"2a encoding: code inputs", hpAmpCodeInputs},
		{"2b encoding: http bodies", hpAmpHTTPBodies},
		{"2c encoding: model requests", hpAmpModelRequests},
		{"2d encoding: tool arguments", hpAmpToolArguments},
		{"2e encoding: distributed items", hpAmpDistributedItems},
		{"2f encoding: results and traces", hpAmpResults},
		{"3 slow reader", hpSlowReader},
		{"3b hosts that never finish", hpSlowHosts},
		{"4 syntax-check bombs", hpSyntaxBombs},
		{"5 pool starvation", hpPoolStarvation},
		{"6 legitimate load", hpLegitimate},
		{"7 getters throwing", hpGettersThrow},
		{"8 redaction residue", hpRedactionResidue},
		{"8b echoes escaped otherwise", hpEscapedEchoes},
	} {
		t.Run(row.name, row.run)
	}
}

// Class 1: no credential the runner holds of its own goes to an endpoint a
// request chose. Bedrock entries that would be signed with the role at the
// request's host — through fields other than the issue's: a region beside
// the baseUrl, a blank key in a second entry, user information naming
// AWS's host, an agent's role — are refused before acceptance, naming the
// field; the entries and clients that may go there (OpenAI and Anthropic
// without a key, Bedrock with its own, an agent, a child workflow's model,
// an MCP toolset, an http node) reach the test's host, which finds none of
// the runner's credentials in any form.
func hpAmbientCredentials(t *testing.T) {
	rec := hpRecord(t, nil)
	host := strings.TrimPrefix(rec.URL, "http://")
	_, port, _ := strings.Cut(host, ":")
	// The Bedrock SDK sends an entry's own key only over TLS.
	tlsRec, certFile := hpRecordTLS(t)
	r := hpStart(t, 4, map[string]string{"SSL_CERT_FILE": certFile})
	modelNode := `{"id":"m","type":"model","with":{"role":"general","prompt":"hi"}}`
	agentNode := `{"id":"a","type":"agent","with":{"role":"planner","prompt":"hi"}}`
	var outs []*hpOutcome
	for _, tt := range []struct{ name, node, models, path string }{
		{"bedrock with a region", modelNode,
			`{"role":"general","provider":"bedrock","model":"m","region":"us-west-2","baseUrl":"` + rec.URL + `/bedrock"}`, "runtime.models[0].apiKey"},
		{"bedrock with a blank key, second entry", modelNode,
			`{"role":"other","provider":"openai","model":"m","apiKey":"k","baseUrl":"` + rec.URL + `/v1"},` +
				`{"role":"general","provider":"bedrock","model":"m","apiKey":" ","baseUrl":"` + rec.URL + `"}`, "runtime.models[1].apiKey"},
		{"bedrock, user info naming AWS", modelNode,
			`{"role":"general","provider":"bedrock","model":"m","baseUrl":"http://bedrock-runtime.eu-west-1.amazonaws.com@` + host + `"}`, "runtime.models[0].apiKey"},
		{"bedrock for an agent", agentNode,
			`{"role":"planner","provider":"bedrock","model":"m","baseUrl":"` + rec.URL + `/x"}`, "runtime.models[0].apiKey"},
		{"bedrock at AWS's host with a trailing dot", modelNode,
			`{"role":"general","provider":"bedrock","model":"m","baseUrl":"https://bedrock-runtime.eu-west-1.amazonaws.com.:443"}`, "runtime.models[0].apiKey"},
		{"bedrock at AWS's host, another port", modelNode,
			`{"role":"general","provider":"bedrock","model":"m","region":"eu-west-1","baseUrl":"https://BEDROCK-RUNTIME.eu-west-1.amazonaws.com:` + port + `"}`, "runtime.models[0].apiKey"},
		{"bedrock at an escaped host", modelNode,
			`{"role":"general","provider":"bedrock","model":"m","baseUrl":"http://127.0.0.1%3a` + port + `"}`, "runtime.models[0].apiKey"},
		{"bedrock, a region naming a host", modelNode,
			`{"role":"general","provider":"bedrock","model":"m","region":"` + host + `/"}`, "runtime.models[0].region"},
	} {
		o := r.post(t, "refused: "+tt.name, hpDoc([]string{tt.node}, `"runtime":{"models":[`+tt.models+`]}`))
		if o.status != http.StatusBadRequest || !bytes.Contains(o.body, []byte(`"path":"`+tt.path+`"`)) {
			t.Errorf("%s: %d %s, want 400 naming %s", o.name, o.status, o.body, tt.path)
		}
		outs = append(outs, o)
	}
	if raw, _ := rec.requests(); len(raw) > 0 {
		t.Errorf("the host received %d requests from entries that were refused", len(raw))
	}

	child := `{"id":"child","nodes":[{"id":"cm","type":"model","with":{"role":"an","prompt":"from a child"}}]}`
	cont := `"onError":"continue"`
	o := r.post(t, "accepted: every client at the host", hpDoc([]string{
		`{"id":"oa","type":"model",` + cont + `,"with":{"role":"oa","prompt":"hi"}}`,
		`{"id":"an","type":"model",` + cont + `,"with":{"role":"an","system":"s","prompt":"hi"}}`,
		`{"id":"br","type":"model",` + cont + `,"with":{"role":"br","prompt":"hi"}}`,
		`{"id":"ag","type":"agent",` + cont + `,"with":{"role":"oa","prompt":"hi"}}`,
		`{"id":"wf","type":"workflow",` + cont + `,"with":{"workflow":"child"}}`,
		`{"id":"t","type":"tool",` + cont + `,"with":{"toolset":"x","tool":"echo","arguments":{"q":1}}}`,
		`{"id":"h","type":"http",` + cont + `,"with":{"url":"` + rec.URL + `/h","method":"POST","headers":{"X-Req":"1"},"body":{"a":1},"failOnStatus":false}}`,
	}, `"runtime":{"models":[
			{"role":"oa","provider":"openai","model":"m","baseUrl":"`+rec.URL+`/v1"},
			{"role":"an","provider":"anthropic","model":"m","baseUrl":"`+rec.URL+`"},
			{"role":"br","provider":"bedrock","model":"m","apiKey":"entry-own-bedrock-key","baseUrl":"`+tlsRec.URL+`"}],
		"toolsets":[{"name":"x","url":"`+rec.URL+`/mcp"}],
		"workflows":[`+child+`],
		"http":{"policy":{"allowPrivateNetwork":true}}}`,
		`"toolPolicies":[{"match":"x/*","decision":"allow"}]`))
	outs = append(outs, o)
	if o.status != http.StatusOK {
		t.Fatalf("%s: %d %s", o.name, o.status, o.body)
	}
	// Each node failed on the host's refusal, named in its event.
	failed := o.nodeFailures()
	for _, id := range []string{"oa", "an", "br", "ag", "wf", "t"} {
		if failed[id] == nil {
			t.Errorf("%s: no node.failed for %s", o.name, id)
		}
	}
	raw, paths := rec.requests()
	for _, want := range []string{"/v1/chat/completions", "/v1/messages", "/mcp", "/h"} {
		if !slices.Contains(paths, want) {
			t.Errorf("the host received %v, none at %s: the check below would see nothing of that client", paths, want)
		}
	}
	braw, bpaths := tlsRec.requests()
	if len(braw) == 0 || !bytes.Contains(braw[0], []byte("Bearer entry-own-bedrock-key")) {
		t.Errorf("the TLS host received %v, not the bedrock entry's call with its own key", bpaths)
	}
	raw, paths = append(raw, braw...), append(paths, bpaths...)
	for i, b := range raw {
		hpNoLeak(t, fmt.Sprintf("request %d to the host (%s)", i, paths[i]), b, hpHeld())
	}
	r.finish(t, nil, outs...)
}

// Class 2, code inputs: a code node's with.input lists one 4 MB string
// twelve times, of a character its JSON makes up to six times longer
// (control characters, quotes, backslashes, U+2028, a tab; "&" and ">",
// which HTML escaping would have), from a request of a few hundred bytes:
// each node is refused when the input is sized, before it is encoded.
func hpAmpCodeInputs(t *testing.T) {
	r := hpStart(t, hpAmpTimeout, nil)
	var nodes, ids []string
	for _, c := range hpAmpChars {
		refs := 12
		if c.char == "&" || c.char == ">" {
			refs = 17 // 68 MB as it is written: over the 64 MiB a worker may hold
		}
		nodes = append(nodes, hpAmpSource(c.name, c.char),
			fmt.Sprintf(`{"id":"c_%s","type":"code","needs":["s_%s"],"onError":"continue","with":{"input":"${{ map(1..%d, nodes.s_%s.output) }}","code":"return input.length"}}`, c.name, c.name, refs, c.name))
		ids = append(ids, "c_"+c.name)
	}
	o := r.post(t, "code inputs", hpDoc(nodes, hpAmpInput()))
	if o.status == http.StatusOK {
		hpRefusedInBand(t, o, ids...)
	} else {
		t.Errorf("%s: %d %s", o.name, o.status, o.body)
	}
	r.finish(t, nil, o)
}

// Class 2, http bodies: an http node's JSON body holds the 4 MB string
// forty times, refused when it is sized; and queries hold the string
// itself, URL-escaped, charged as net/http would hold it: the host
// receives nothing large.
func hpAmpHTTPBodies(t *testing.T) {
	rec := hpRecord(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = io.WriteString(w, "ok") })
	r := hpStart(t, hpAmpTimeout, nil)
	var nodes, ids []string
	for _, c := range hpAmpChars {
		refs := make([]string, 40)
		for i := range refs {
			refs[i] = hpString("${{ nodes.s_" + c.name + ".output }}")
		}
		nodes = append(nodes, hpAmpSource(c.name, c.char),
			`{"id":"h_`+c.name+`","type":"http","needs":["s_`+c.name+`"],"onError":"continue","with":{"url":"`+rec.URL+`/b","method":"PUT","body":{"v":[`+strings.Join(refs, ",")+`]}}}`)
		ids = append(ids, "h_"+c.name)
	}
	// Four queries of a control character: three bytes each escaped,
	// 12 MB a URL, four times that as net/http holds it: two fit in the
	// budget (and the host refuses their header), two do not.
	for i := range 4 {
		nodes = append(nodes, fmt.Sprintf(`{"id":"q%d","type":"http","needs":["s_ctl"],"onError":"continue","with":{"url":"%s/q","query":{"q":"${{ nodes.s_ctl.output }}"}}}`, i, rec.URL))
	}
	o := r.post(t, "http bodies", hpDoc(nodes, hpAmpInput(), `"runtime":{"http":{"policy":{"allowPrivateNetwork":true}}}`))
	if o.status == http.StatusOK {
		hpRefusedInBand(t, o, ids...)
	} else {
		t.Errorf("%s: %d %s", o.name, o.status, o.body)
	}
	raw, _ := rec.requests()
	for i, b := range raw {
		if len(b) > 64<<20 {
			t.Errorf("request %d to the host is %d bytes", i, len(b))
		}
	}
	r.finish(t, nil, o)
}

// Class 2, model requests: a model node's messages repeat the 4 MB string
// eight times, for each provider, and its system prompt holds it too: the
// request is sized as its SDK writes it (HTML escaping and all) and
// charged before the call, and refused; the host receives none of it.
func hpAmpModelRequests(t *testing.T) {
	rec := hpRecord(t, nil)
	r := hpStart(t, hpAmpTimeout, nil)
	var nodes, ids []string
	for _, c := range hpAmpChars {
		msgs := make([]string, 8)
		for i := range msgs {
			msgs[i] = `{"role":"user","content":"${{ nodes.s_` + c.name + `.output }}"}`
		}
		nodes = append(nodes, hpAmpSource(c.name, c.char))
		for _, role := range []string{"oa", "an", "br"} {
			id := "m_" + role + "_" + c.name
			nodes = append(nodes, `{"id":"`+id+`","type":"model","needs":["s_`+c.name+`"],"onError":"continue","with":{"role":"`+role+`","system":"${{ nodes.s_`+c.name+`.output }}","messages":[`+strings.Join(msgs, ",")+`]}}`)
			ids = append(ids, id)
		}
	}
	o := r.post(t, "model requests", hpDoc(nodes, hpAmpInput(), `"runtime":{"models":[
			{"role":"oa","provider":"openai","model":"m","apiKey":"k","baseUrl":"`+rec.URL+`/v1"},
			{"role":"an","provider":"anthropic","model":"m","apiKey":"k","baseUrl":"`+rec.URL+`"},
			{"role":"br","provider":"bedrock","model":"m","apiKey":"k","baseUrl":"`+rec.URL+`"}]}`))
	if o.status == http.StatusOK {
		hpRefusedInBand(t, o, ids...)
	} else {
		t.Errorf("%s: %d %s", o.name, o.status, o.body)
	}
	if raw, paths := rec.requests(); len(raw) > 0 {
		t.Errorf("the host received %d requests (%v): refused requests were sent", len(raw), paths)
	}
	r.finish(t, nil, o)
}

// Class 2, tool arguments: a tool call's arguments repeat the 4 MB string
// forty times: sized as the MCP client writes them and refused before the
// call; the server never sees them.
func hpAmpToolArguments(t *testing.T) {
	var calls atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Says how much it was sent."},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	r := hpStart(t, hpAmpTimeout, nil)
	var nodes, ids []string
	for _, c := range hpAmpChars {
		refs := make([]string, 40)
		for i := range refs {
			refs[i] = hpString("${{ nodes.s_" + c.name + ".output }}")
		}
		nodes = append(nodes, hpAmpSource(c.name, c.char),
			`{"id":"t_`+c.name+`","type":"tool","needs":["s_`+c.name+`"],"onError":"continue","with":{"toolset":"e","tool":"echo","arguments":{"v":[`+strings.Join(refs, ",")+`]}}}`)
		ids = append(ids, "t_"+c.name)
	}
	// The control: a small call goes through.
	nodes = append(nodes, `{"id":"small","type":"tool","with":{"toolset":"e","tool":"echo","arguments":{"v":"&>\u2028"}}}`)
	o := r.post(t, "tool arguments", hpDoc(nodes, hpAmpInput(),
		`"runtime":{"toolsets":[{"name":"e","url":"`+ts.URL+`"}]}`, `"toolPolicies":[{"match":"e/*","decision":"allow"}]`))
	if o.status == http.StatusOK {
		hpRefusedInBand(t, o, ids...)
		if o.nodeFailures()["small"] != nil {
			t.Errorf("%s: the small call failed: %v", o.name, o.nodeFailures()["small"])
		}
	} else {
		t.Errorf("%s: %d %s", o.name, o.status, o.body)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the tool was called %d times, want once (the small call)", n)
	}
	r.finish(t, nil, o)
}

// Class 2, distributed items: a distributed map's 190 items each list the
// 4 MB string twice, over what one child's event can carry: every item is
// sized, never encoded, and the map refused before any child is invoked.
func hpAmpDistributedItems(t *testing.T) {
	var invoked atomic.Int64
	lambda := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		invoked.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = io.WriteString(w, `{"errorMessage":"the test's Lambda runs nothing"}`)
	}))
	t.Cleanup(func() {
		lambda.CloseClientConnections()
		lambda.Close()
	})
	r := hpStart(t, hpAmpTimeout, map[string]string{
		"RUNNER_MAX_FANOUT_INVOCATIONS": "4",
		"RUNNER_FANOUT_FUNCTION":        "runner",
		"AWS_ENDPOINT_URL_LAMBDA":       lambda.URL,
	})
	var nodes, ids []string
	for _, c := range hpAmpChars {
		items := "map(1..190, [nodes.s_" + c.name + ".output, nodes.s_" + c.name + ".output])"
		nodes = append(nodes, hpAmpSource(c.name, c.char),
			`{"id":"d_`+c.name+`","type":"map","needs":["s_`+c.name+`"],"onError":"continue","with":{"items":"${{ `+items+` }}","distribute":{"invocations":4},
				"nodes":[{"id":"n","type":"set","with":{"value":"${{ len(item) }}"}}]}}`)
		ids = append(ids, "d_"+c.name)
	}
	o := r.post(t, "distributed items", hpDoc(nodes, hpAmpInput()))
	if o.status == http.StatusOK {
		hpRefusedInBand(t, o, ids...)
	} else {
		t.Errorf("%s: %d %s", o.name, o.status, o.body)
	}
	if n := invoked.Load(); n != 0 {
		t.Errorf("%d child invocations of items that cannot fit one", n)
	}
	r.finish(t, nil, o)
}

// Class 2, results and traces: the workflow's output lists the 4 MB string
// of a control character ten times (240 MB as the result event writes
// it), and traced nodes pass 4 MB strings of every character on: the
// output is refused in-band (the result is never cut), each traced event
// is cut to maxEventBytes, and the stream stays far under its limit.
func hpAmpResults(t *testing.T) {
	r := hpStart(t, hpAmpTimeout, nil)
	var nodes []string
	for _, c := range hpAmpChars {
		nodes = append(nodes, hpAmpSource(c.name, c.char))
	}
	refs := make([]string, 10)
	for i := range refs {
		refs[i] = "nodes.s_ctl.output"
	}
	o := r.post(t, "result of 240 MB escaped", `{"version":1,"trace":true,"workflow":{"nodes":[`+strings.Join(nodes, ",")+
		`],"output":"${{ [`+strings.Join(refs, ",")+`] }}"},`+hpAmpInput()+`}`)
	if o.status != http.StatusOK {
		t.Fatalf("%s: %d %s", o.name, o.status, o.body)
	}
	term := o.terminalEvent()
	e, _ := term["error"].(map[string]any)
	if msg, _ := e["message"].(string); term["type"] != "error" || !strings.Contains(msg, "LIMIT_EXCEEDED") && !strings.Contains(msg, "OUTPUT_TOO_LARGE") {
		t.Errorf("%s: terminal %v, want the output refused with its bound named", o.name, term)
	}
	if len(o.body) > 4<<20 {
		t.Errorf("%s: a stream of %d bytes", o.name, len(o.body))
	}
	r.finish(t, nil, o)
}

// Class 3: a client that stops reading for longer than the execution
// lasts. Not the chain of set nodes: a map of 2,000 iterations,
// each a traced set node passing on 1.5 KB of characters JSON escapes
// (U+2028, quotes, control characters: 4 KB an event), to a client whose
// receive buffer is small, so the writer finds no room long before the
// deadline. The runner's end of the connection must be closed by the
// execution's end (deadline + reserve; watched in /proc/net/tcp while the
// client still reads nothing), no node may start or complete after the
// deadline, and the terminal event, if the client gets it, is stamped by
// the end.
func hpSlowReader(t *testing.T) {
	const timeout = 3
	r := hpStart(t, timeout, nil)
	blob := strings.Repeat("\u2028\"\x01>", 256)
	body := `{"version":1,"trace":true,"input":{"b":` + hpString(blob) + `},"workflow":{"nodes":[
		{"id":"each","type":"map","with":{"items":"${{ 1..2000 }}","nodes":[{"id":"n","type":"set","with":{"value":"${{ input.b }}"}}]}}]}}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Far less than the stream (16 MB), yet enough that what the kernels
	// hold at the end is read back in well under a second.
	_ = conn.(*net.TCPConn).SetReadBuffer(256 << 10)
	req, _ := http.NewRequest(http.MethodPost, r.base+"/v1/executions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	res, err := http.ReadResponse(br, req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("response %v, %v", res, err)
	}
	lines := bufio.NewReader(res.Body)
	first, err := lines.ReadBytes('\n')
	var acc map[string]any
	if err != nil || json.Unmarshal(first, &acc) != nil || acc["type"] != "accepted" {
		t.Fatalf("first line %q, %v", first, err)
	}
	deadline := r.deadlineOf(acc, start)
	end := deadline + hpReserve

	// The client reads nothing more until well after the end; meanwhile
	// the runner's socket of this connection is watched.
	server := conn.RemoteAddr().(*net.TCPAddr).Port
	client := conn.LocalAddr().(*net.TCPAddr).Port
	var closed time.Duration
	for time.Since(start) < end+1500*time.Millisecond {
		if closed == 0 && hpConnState(server, client) != "01" { // 01: established
			closed = time.Since(start)
		}
		time.Sleep(hpSample)
	}
	// It reads again: what the kernels still hold of the stream
	// (megabytes in the runner's send buffer).
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	readFrom := time.Now()
	rest, _ := io.ReadAll(lines)
	readIn := time.Since(readFrom)
	o := &hpOutcome{name: "slow reader", status: http.StatusOK, body: append(first, rest...), deadline: deadline}
	events, lateFailed, terminals := 0, 0, 0
	for l := range bytes.SplitSeq(rest, []byte("\n")) {
		var ev map[string]any
		if json.Unmarshal(l, &ev) != nil {
			continue // the line the connection was cut in
		}
		events++
		s, _ := ev["at"].(string)
		at, _ := time.Parse(time.RFC3339Nano, s)
		since := at.Sub(start)
		switch typ, _ := ev["type"].(string); {
		case typ == "result" || typ == "error":
			terminals++
			o.terminal = since
			if since > end {
				t.Errorf("terminal event stamped %.2fs after the request started, past the end (%.2fs)", since.Seconds(), end.Seconds())
			}
		case since <= deadline:
		case typ == "node.failed":
			// A node under way at the deadline fails there.
			lateFailed++
		case strings.HasPrefix(typ, "node."):
			t.Errorf("%s stamped %.3fs after the request started, past the deadline (%.3fs): %s", typ, since.Seconds(), deadline.Seconds(), l)
		}
	}
	o.note = fmt.Sprintf("connection closed by the runner at %.2fs (deadline %.2fs, end %.2fs); the client then read %d events (%d bytes, in %.2fs), %d node.failed after the deadline, %d terminal",
		closed.Seconds(), deadline.Seconds(), end.Seconds(), events, len(rest), readIn.Seconds(), lateFailed, terminals)
	switch {
	case closed == 0:
		t.Errorf("the runner never closed the connection of a client that did not read (%.2fs after the end)", (time.Since(start) - end).Seconds())
	case closed > end+hpSlack/2:
		t.Errorf("the runner closed the connection %.2fs after the request started, past the execution's end (%.2fs)", closed.Seconds(), end.Seconds())
	}
	if terminals > 1 {
		t.Errorf("%d terminal events", terminals)
	}
	r.finish(t, nil, o)
}

// hpConnState returns the state of the TCP socket from local port lport to
// remote port rport ("01" is established), "" when there is none.
func hpConnState(lport, rport int) string {
	b, _ := os.ReadFile("/proc/net/tcp")
	for l := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && hpPort(f[1]) == lport && hpPort(f[2]) == rport {
			return f[3]
		}
	}
	return ""
}

// hpPort is the port of an address as /proc/net/tcp writes it.
func hpPort(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.ParseUint(p, 16, 16)
	return int(n)
}

// Class 4: syntax checks before acceptance have one budget (a quarter of
// the execution's time, 1 s here). Many bodies of each kind, none the
// issue's: brackets hidden by regular expression literals inside nested
// templates and inside parentheses (the pre-filter reads them as the
// parser does: refused at once, 400), assignment chains the filter lets
// through and the parser takes long over, and bodies of ordinary code near
// maxCodeBytes, each new: a 400, a 503 with Retry-After, or (when every
// check fits in it) acceptance, by the budget and 1.5 s; then an ordinary
// request still runs.
func hpSyntaxBombs(t *testing.T) {
	const timeout = 4
	budget := time.Duration(timeout) * time.Second / 4
	r := hpStart(t, timeout, nil)
	nonce := time.Now().UnixNano()
	ordinary := strings.Repeat("x = (x * 31 + 7) % 1000003; ", 2300)
	var outs []*hpOutcome
	for _, tt := range []struct {
		name   string
		bodies int
		body   func(i int) string
	}{
		{"templates around regex literals", 48, func(i int) string {
			return "return " + strings.Repeat("`${/[`}]/.source+", 300) + strconv.Itoa(i) + strings.Repeat("}`", 300)
		}},
		{"parentheses around regex literals", 48, func(i int) string {
			return "return " + strings.Repeat("(/[)]/,", 300) + strconv.Itoa(i) + strings.Repeat(")", 300)
		}},
		{"assignment chains", 48, func(i int) string {
			return fmt.Sprintf("let a; a = %s%d // %d", strings.Repeat("a=", 30000), i, nonce)
		}},
		// 90 bodies of 64 KB: the most a request of 6 MiB holds.
		{"ordinary code near maxCodeBytes", 90, func(i int) string {
			return fmt.Sprintf("let x = %d; /* %d */ %sreturn x", i, nonce, ordinary)
		}},
	} {
		nodes := make([]string, tt.bodies)
		for i := range nodes {
			nodes[i] = fmt.Sprintf(`{"id":"c%d","type":"code","with":{"code":%s}}`, i, hpString(tt.body(i)))
		}
		o := r.post(t, tt.name, hpDoc(nodes))
		outs = append(outs, o)
		answered := o.took
		if o.status == http.StatusOK {
			answered = o.accepted
		}
		switch {
		case answered > budget+1500*time.Millisecond:
			// The budget bounds the checks; reading and decoding a
			// request of 6 MB comes before them.
			t.Errorf("%s: answered %d after %.2fs, over the checks' budget (%v) and 1.5 s", o.name, o.status, answered.Seconds(), budget)
		case o.status == http.StatusOK:
			// Every check made within the budget: the request runs.
		case o.status == http.StatusServiceUnavailable:
			if o.header.Get("Retry-After") == "" || !bytes.Contains(o.body, []byte(`"UNAVAILABLE"`)) {
				t.Errorf("%s: 503 without Retry-After or UNAVAILABLE: %s", o.name, o.body)
			}
		case o.status == http.StatusBadRequest:
			if !bytes.Contains(o.body, []byte(`"path":"workflow.nodes[0].with.code"`)) {
				t.Errorf("%s: 400 not naming the first body: %.500s", o.name, o.body)
			}
		default:
			t.Errorf("%s: %d after %.2fs, want 400, 503 or acceptance: %.300s", o.name, o.status, o.took.Seconds(), o.body)
		}
	}
	o := r.post(t, "then an ordinary request", hpDoc([]string{fmt.Sprintf(`{"id":"c","type":"code","with":{"code":"// %d\nreturn 6 * 7"}}`, nonce)}))
	if !bytes.Contains(o.body, []byte(`"output":{"c":42}`)) {
		t.Errorf("%s: %d %s", o.name, o.status, o.body)
	}
	r.finish(t, nil, append(outs, o)...)
}

// Class 5: one execution keeps every worker it may have busy with code
// that never ends, spun other ways than while (true) {}: another request's
// body, never seen before, is checked, and its code node, whose timeoutMs
// is shorter than the spinners' run, completes; the spinners end at their
// deadline.
func hpPoolStarvation(t *testing.T) {
	r := hpStart(t, 4, nil)
	var nodes []string
	for i, code := range []string{
		"for (;;) {}",
		"do {} while (1)",
		"let i = 0; while (i >= 0) i = (i + 1) % 7",
		"(function f() { for (;;); })()",
		"for (const _ of (function* () { for (;;) yield 1 })()) {}",
		"while (Date.now() > 0) Math.sqrt(2)",
	} {
		nodes = append(nodes, fmt.Sprintf(`{"id":"spin%d","type":"code","with":{"code":%s}}`, i, hpString(code)))
	}
	nodes = append(nodes, `{"id":"spinmap","type":"map","with":{"items":[1,2,3,4],"nodes":[{"id":"s","type":"code","with":{"code":"for (;;) {}"}}]}}`)
	started := make(chan struct{})
	var once sync.Once
	hogDone := make(chan *hpOutcome, 1)
	go func() {
		hogDone <- r.postWatch(t, "spinners", hpDoc(nodes), func(ev map[string]any) {
			if ev["type"] == "node.started" {
				once.Do(func() { close(started) })
			}
		})
	}()
	select {
	case <-started:
	case <-time.After(runPatience):
		t.Fatal("the spinners never started")
	}
	time.Sleep(300 * time.Millisecond) // the spinners hold what they may
	other := r.post(t, "another request", hpDoc([]string{fmt.Sprintf(
		`{"id":"c","type":"code","timeoutMs":1500,"with":{"input":{"n":7},"code":"// %d\nlet s = 0; for (let i = 0; i < 1e5; i++) s += i %% 3; return input.n * 6 + (s > 0 ? 0 : 1)"}}`, time.Now().UnixNano())}))
	if !bytes.Contains(other.body, []byte(`"status":"completed","output":{"c":42}`)) {
		t.Errorf("%s, while one execution spins: %d %s", other.name, other.status, other.body)
	}
	hog := <-hogDone
	if term := hog.terminalEvent(); term == nil || !strings.Contains(fmt.Sprint(term["error"]), "DEADLINE_EXCEEDED") {
		t.Errorf("%s: terminal %v, want the deadline", hog.name, term)
	}
	r.finish(t, nil, hog, other)
}

// Class 6, legitimate: eight parallel code nodes of about a second each,
// each with timeoutMs 2500, all complete however long they wait for a
// worker; beside them, another execution's code node returns an HTML
// table of markup, quotes and U+2028 4 KiB under the 4 MiB output cap,
// which comes back whole. The cap measures the value as JSON.stringify
// writes it (docs/workflows.md): markup and U+2028 as they are, a quote
// and a newline two bytes each.
func hpLegitimate(t *testing.T) {
	r := hpStart(t, 12, nil)
	nodes := make([]string, 8)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`{"id":"n%d","type":"code","timeoutMs":2500,"with":{"code":"let n = 0; const end = Date.now() + 1000; while (Date.now() < end) n++; return n > 0 ? %d : -1"}}`, i, i)
	}
	const row = "<tr><td class=\"q\">a &amp; b &lt; c</td><td>\u2028'\"&<></td></tr>\n"
	stringified := func(s string) int { return len(s) + strings.Count(s, `"`) + strings.Count(s, "\n") }
	count := ((4 << 20) - (4 << 10) - stringified(`"<table>\n</table>"`)) / stringified(row)
	want := "<table>\n" + strings.Repeat(row, count) + "</table>"
	markupDone := make(chan *hpOutcome, 1)
	go func() {
		code := fmt.Sprintf("const row = %s; return '<table>\\n' + row.repeat(%d) + '</table>'", hpString(row), count)
		markupDone <- r.post(t, "markup near the cap", hpDoc([]string{`{"id":"m","type":"code","with":{"code":` + hpString(code) + `}}`}))
	}()
	par := r.post(t, "8 parallel 1-s nodes", hpDoc(nodes))
	if !bytes.Contains(par.body, []byte(`"status":"completed","output":{"n0":0,"n1":1,"n2":2,"n3":3,"n4":4,"n5":5,"n6":6,"n7":7}`)) {
		t.Errorf("%s: %d %.2000s", par.name, par.status, par.body)
	}
	markup := <-markupDone
	if term := markup.terminalEvent(); term == nil || term["type"] != "result" {
		t.Errorf("%s: %d %.1000s", markup.name, markup.status, markup.body)
	} else if out, _ := term["output"].(map[string]any); out["m"] != want {
		got, _ := out["m"].(string)
		t.Errorf("%s: output of %d bytes, want the %d of the table", markup.name, len(got), len(want))
	}
	r.finish(t, nil, par, markup)
}

// Class 7: whatever the author's code throws while its result is read —
// from getters of other shapes than the issue's, a property descriptor's
// trap, a non-Error value — fails the node CODE_ERROR with what it threw.
func hpGettersThrow(t *testing.T) {
	r := hpStart(t, 4, nil)
	cases := []struct{ code, msg string }{
		{"return [1, {get y() { throw new RangeError('r1') }}]", "RangeError: r1"},
		{"const o = {}; Object.defineProperty(o, 'k', {enumerable: true, get() { throw new SyntaxError('s2') }}); return o", "SyntaxError: s2"},
		{"return {a: {b: [{get c() { throw 'deep3' }}]}}", "deep3"},
		{"return new Proxy({}, {ownKeys() { return ['x'] }, getOwnPropertyDescriptor() { throw new Error('d4') }})", "d4"},
		{"return {n: 1, get [Symbol.iterator]() { return 1 }, get z() { throw new TypeError('z5') }}", "TypeError: z5"},
		{"return Promise.resolve([{get w() { throw new EvalError('w6') }}])", "EvalError: w6"},
		{"return new Proxy([1, 2], {get(t, k) { if (k === 'length') throw new Error('len7'); return t[k] }})", "len7"},
	}
	var nodes []string
	for i, c := range cases {
		nodes = append(nodes, fmt.Sprintf(`{"id":"g%d","type":"code","onError":"continue","with":{"code":%s}}`, i, hpString(c.code)))
	}
	o := r.post(t, "getters", hpDoc(nodes))
	failed := o.nodeFailures()
	for i, c := range cases {
		e := failed[fmt.Sprintf("g%d", i)]
		if msg, _ := e["message"].(string); e["code"] != "CODE_ERROR" || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: node.failed %v, want CODE_ERROR with %q", c.code, e, c.msg)
		}
	}
	r.finish(t, nil, o)
}

// Class 8: a host a secret is bound to echoes the credential it was sent,
// Basic and Bearer, in the ways a host quotes a header (as it is, its
// base64 part, decoded, hex, URL-escaped, base64 of the header at each
// offset and in the URL alphabet), for secrets of each length modulo 3
// and usernames of each too. What the events show of each echo is the
// part no secret decided, then one [REDACTED]: no padding, no partial
// character, nothing after it; and no form of the secret or of the
// credential anywhere in the stream or the log.
func hpRedactionResidue(t *testing.T) {
	host := hpRecord(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(hpEchoes(r.Header.Get("Authorization")))
	})
	r := hpStart(t, 4, nil)
	secrets := map[string]string{}
	var nodes []string
	type echo struct{ id, user, secret string }
	var sent []echo
	for i, secret := range []string{"Tr0ub4dor&3x/y+z?", "Tr0ub4dor&3x/y+z?Q", "Tr0ub4dor&3x/y+z?QR"} {
		name := fmt.Sprintf("k%d", i)
		secrets[name] = secret
		for j, user := range []string{"", "ops:", "svc-user:", "ci:"} {
			id := fmt.Sprintf("h%d_%d", i, j)
			hdr := "Bearer ${{ secrets." + name + " }}"
			if user != "" {
				hdr = "Basic ${{ toBase64('" + user + "' + secrets." + name + ") }}"
				secrets[id+" credential"] = base64.StdEncoding.EncodeToString([]byte(user + secret))
			}
			nodes = append(nodes, `{"id":"`+id+`","type":"http","with":{"url":"`+host.URL+`/echo","headers":{"Authorization":"`+hdr+`"}}}`)
			sent = append(sent, echo{id, user, secret})
		}
	}
	var sec []string
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		if !strings.HasSuffix(name, "credential") {
			sec = append(sec, `"`+name+`":{"value":`+hpString(secrets[name])+`,"hosts":["127.0.0.1"]}`)
		}
	}
	o := r.post(t, "echoes", `{"version":1,"trace":true,"workflow":{"nodes":[`+strings.Join(nodes, ",")+`]},
		"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{`+strings.Join(sec, ",")+`}}}}`)
	term := o.terminalEvent()
	if term == nil || term["type"] != "result" {
		t.Fatalf("%s: %d %.2000s", o.name, o.status, o.body)
	}
	got, _ := term["output"].(map[string]any)
	for _, e := range sent {
		body, _ := got[e.id].(map[string]any)
		body, _ = body["body"].(map[string]any)
		if body == nil {
			t.Errorf("%s: no echo in the output", e.id)
			continue
		}
		header := func(s string) string {
			if e.user == "" {
				return "Bearer " + s
			}
			return "Basic " + base64.StdEncoding.EncodeToString([]byte(e.user+s))
		}
		// What the secret does not decide: the echo of the header with
		// the secret, and with two others of its length, agree on it.
		real := hpEchoes(header(e.secret))
		alt1 := hpEchoes(header(strings.Repeat("*", len(e.secret))))
		alt2 := hpEchoes(header(strings.Repeat("U", len(e.secret))))
		for _, field := range slices.Sorted(maps.Keys(real)) {
			v, _ := body[field].(string)
			safe := real[field][:min(commonPrefixLen(real[field], alt1[field]), commonPrefixLen(real[field], alt2[field]))]
			p, ok := strings.CutSuffix(v, "[REDACTED]")
			if !ok || strings.Contains(p, "[REDACTED]") || !strings.HasPrefix(safe, p) {
				t.Errorf("%s (%q + a secret of %d bytes), echo %s: %q, want a prefix of %q then one [REDACTED], nothing after",
					e.id, e.user, len(e.secret), field, v, safe)
			}
		}
	}
	r.finish(t, secrets, o)
}

// hpEchoes are the ways the test's host quotes an Authorization header.
func hpEchoes(h string) map[string]string {
	out := map[string]string{
		"as it is":       h,
		"hex":            hex.EncodeToString([]byte(h)),
		"HEX":            strings.ToUpper(hex.EncodeToString([]byte(h))),
		"query-escaped":  url.QueryEscape(h),
		"base64url, raw": base64.RawURLEncoding.EncodeToString([]byte(h)),
	}
	for i, pre := range []string{"", "x", "xy"} {
		out[fmt.Sprintf("base64 at offset %d", i)] = base64.StdEncoding.EncodeToString([]byte(pre + h))
	}
	if cred, ok := strings.CutPrefix(h, "Basic "); ok {
		out["credential"] = cred
		if d, err := base64.StdEncoding.DecodeString(cred); err == nil {
			out["decoded"] = string(d)
		}
	}
	return out
}

func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Class 3, hosts: every client a request points at a host that answers
// and then never finishes — an http node's body trickling a byte every
// 200 ms (and six of them in a map), OpenAI and Anthropic streams that
// trickle the same way (a model node and an agent), an MCP endpoint that
// never answers, one that opens its stream and sends nothing, and a tool
// that never returns — ends by the execution's deadline, with exactly one
// terminal event. Beside them (class 2, the other way), code nodes return
// arrays of one shared object, a few hundred KB of JSON that decode to
// tens of MB: refused in-band by the reply's decoded weight.
func hpSlowHosts(t *testing.T) {
	quit := make(chan struct{})
	trickle := func(ct string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(http.StatusOK)
			for {
				if _, err := io.WriteString(w, " "); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-quit:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Never returns."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-quit:
			}
			return nil, nil, errors.New("stopped")
		})
	mux := http.NewServeMux()
	mux.HandleFunc("/trickle", trickle("application/json"))
	mux.HandleFunc("/v1/chat/completions", trickle("text/event-stream"))
	mux.HandleFunc("/v1/messages", trickle("text/event-stream"))
	mux.HandleFunc("/mcp-hang", hang)
	mux.HandleFunc("/mcp-silent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		hang(w, r)
	})
	mux.Handle("/mcp-slow", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(quit)
		// The runner left at its deadline: its session is closed here.
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		ts.CloseClientConnections()
		ts.Close()
	})
	r := hpStart(t, 4, nil)
	cont := `"onError":"continue"`
	nodes := []string{
		`{"id":"h","type":"http",` + cont + `,"with":{"url":"` + ts.URL + `/trickle"}}`,
		`{"id":"oa","type":"model",` + cont + `,"with":{"role":"oa","prompt":"hi"}}`,
		`{"id":"an","type":"model",` + cont + `,"with":{"role":"an","prompt":"hi"}}`,
		`{"id":"ag","type":"agent",` + cont + `,"with":{"role":"oa","prompt":"hi"}}`,
		`{"id":"t1","type":"tool",` + cont + `,"with":{"toolset":"hang","tool":"x","arguments":{}}}`,
		`{"id":"t2","type":"tool",` + cont + `,"with":{"toolset":"silent","tool":"x","arguments":{}}}`,
		`{"id":"t3","type":"tool",` + cont + `,"with":{"toolset":"slow","tool":"wait","arguments":{}}}`,
		`{"id":"mp","type":"map",` + cont + `,"with":{"items":[1,2,3,4,5,6],"nodes":[{"id":"x","type":"http","with":{"url":"` + ts.URL + `/trickle"}}]}}`,
	}
	weighty := []string{"const o = {a: {}}; return new Array(100000).fill(o)", "const o = [[]]; return new Array(150000).fill(o)"}
	for i, code := range weighty {
		nodes = append(nodes, fmt.Sprintf(`{"id":"w%d","type":"code",`+cont+`,"with":{"code":%s}}`, i, hpString(code)))
	}
	o := r.post(t, "hosts that never finish", hpDoc(nodes, `"runtime":{"models":[
			{"role":"oa","provider":"openai","model":"m","apiKey":"k","baseUrl":"`+ts.URL+`/v1"},
			{"role":"an","provider":"anthropic","model":"m","apiKey":"k","baseUrl":"`+ts.URL+`"}],
		"toolsets":[{"name":"hang","url":"`+ts.URL+`/mcp-hang"},{"name":"silent","url":"`+ts.URL+`/mcp-silent"},{"name":"slow","url":"`+ts.URL+`/mcp-slow"}],
		"http":{"policy":{"allowPrivateNetwork":true}}}`,
		`"toolPolicies":[{"match":"*/*","decision":"allow"}]`))
	if term := o.terminalEvent(); term == nil || !strings.Contains(fmt.Sprint(term["error"]), "DEADLINE_EXCEEDED") {
		t.Errorf("%s: terminal %v, want the deadline", o.name, term)
	}
	failed := o.nodeFailures()
	for _, id := range []string{"h", "oa", "an", "ag", "t1", "t2", "t3", "mp"} {
		if failed[id] == nil {
			t.Errorf("%s: no node.failed for %s", o.name, id)
		}
	}
	hpRefusedInBand(t, o, "w0", "w1")
	r.finish(t, nil, o)
}

// Class 8, escapes: a host echoes the query secret it was sent as other
// encoders escape it — Python's json.dumps (\u00e4, a surrogate pair),
// an HTML page (&amp; &lt; &#39;), a redirect's next= (escaped twice) — in
// a text body no JSON decoding reads: the body shows what the host wrote
// around it, then one [REDACTED], then the rest.
func hpEscapedEchoes(t *testing.T) {
	pyJSON := func(s string) string {
		var b strings.Builder
		for _, c := range s {
			switch {
			case c > 0xffff:
				r1, r2 := utf16.EncodeRune(c)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			case c > 0x7e:
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				b.WriteRune(c)
			}
		}
		return b.String()
	}
	escapes := map[string]func(string) string{
		"py":   func(v string) string { return `{"detail": "bad key ` + pyJSON(v) + `"}` },
		"html": func(v string) string { return "<p>bad key " + html.EscapeString(v) + "</p>" },
		"double": func(v string) string {
			return "see /login?next=" + url.QueryEscape("/x?k="+url.QueryEscape(v)) + " now"
		},
	}
	host := hpRecord(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, escapes[strings.TrimPrefix(r.URL.Path, "/")](r.URL.Query().Get("k")))
	})
	r := hpStart(t, 4, nil)
	secrets := map[string]string{"uml": "pässwörd-Geheim-42", "amp": "key&pass<word>'q9", "emo": "s3cr3t😀emoji", "res": "a/b+c=d?e&f-gh1234"}
	var nodes, sec []string
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		sec = append(sec, `"`+name+`":{"value":`+hpString(secrets[name])+`,"hosts":["127.0.0.1"]}`)
		for _, e := range slices.Sorted(maps.Keys(escapes)) {
			nodes = append(nodes, `{"id":"`+name+`_`+e+`","type":"http","with":{"url":"`+host.URL+`/`+e+`","query":{"k":"${{ secrets.`+name+` }}"}}}`)
		}
	}
	o := r.post(t, "escaped echoes", `{"version":1,"workflow":{"nodes":[`+strings.Join(nodes, ",")+`]},
		"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{`+strings.Join(sec, ",")+`}}}}`)
	term := o.terminalEvent()
	if term == nil || term["type"] != "result" {
		t.Fatalf("%s: %d %.2000s", o.name, o.status, o.body)
	}
	got, _ := term["output"].(map[string]any)
	for name := range secrets {
		for e, escape := range escapes {
			id := name + "_" + e
			out, _ := got[id].(map[string]any)
			// What the host wrote around the value, whatever the value.
			around := strings.Split(escape("\x00"), url.QueryEscape(url.QueryEscape("\x00")))
			if len(around) != 2 {
				around = strings.Split(escape("\x00"), pyJSON("\x00"))
			}
			if body, _ := out["body"].(string); body != around[0]+"[REDACTED]"+around[1] {
				t.Errorf("%s: the echo reads %q, want %q", id, body, around[0]+"[REDACTED]"+around[1])
			}
		}
	}
	r.finish(t, secrets, o)
}
