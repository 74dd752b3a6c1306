package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// encode stamps e's header and returns its line, newline included, in
// w.line (valid until the next encode), cut to fit MaxEventBytes. The
// events of every node attempt are written by hand, byte for byte as
// encoding/json (without HTML escaping) would write them, because they are
// most of a stream; the rest go through encoding/json.
func (w *Writer) encode(e Event) ([]byte, error) {
	h := e.header()
	h.Version = Version
	h.Type = e.eventType()
	h.ExecutionID = w.id
	if m := w.opts.MaxEventBytes; m > 0 {
		// A text longer than the line cannot fit whatever else is cut:
		// cut it first, so that a huge message is never encoded whole.
		texts, _ := fields(e, &w.texts)
		for _, p := range texts {
			if len(*p) > m {
				*p = cutText(*p, m, len(*p))
			}
		}
	}
	line, err := w.appendEvent(w.line[:0], e)
	if err != nil {
		return nil, err
	}
	w.line = line
	if m := w.opts.MaxEventBytes; m > 0 && len(line) > m {
		if _, ok := e.(*Result); !ok {
			return w.shrink(e, m)
		}
	}
	return line, nil
}

func (w *Writer) appendEvent(dst []byte, e Event) ([]byte, error) {
	switch e := e.(type) {
	case *Accepted:
		return append(w.appendHeader(dst, &e.Header), "}\n"...), nil
	case *NodeStarted:
		dst = w.appendHeader(dst, &e.Header)
		dst = appendNode(dst, e.NodeID, e.NodeType, e.Attempt)
		if e.Role != nil {
			dst = appendString(append(dst, `,"role":{"requested":`...), e.Role.Requested)
			dst = append(appendString(append(dst, `,"used":`...), e.Role.Used), '}')
		}
		if len(e.Input) > 0 {
			var err error
			if dst, err = w.appendRaw(append(dst, `,"input":`...), e.Input); err != nil {
				return nil, err
			}
		}
		return append(dst, "}\n"...), nil
	case *NodeCompleted:
		dst = w.appendHeader(dst, &e.Header)
		dst = appendNode(dst, e.NodeID, e.NodeType, e.Attempt)
		dst = strconv.AppendInt(append(dst, `,"durationMs":`...), e.DurationMs, 10)
		if len(e.Output) > 0 {
			var err error
			if dst, err = w.appendRaw(append(dst, `,"output":`...), e.Output); err != nil {
				return nil, err
			}
		}
		return w.appendCodeFields(dst, e.Logs, e.QueuedMs)
	case *NodeFailed:
		dst = w.appendHeader(dst, &e.Header)
		dst = appendNode(dst, e.NodeID, e.NodeType, e.Attempt)
		dst = strconv.AppendInt(append(dst, `,"durationMs":`...), e.DurationMs, 10)
		dst = appendString(append(dst, `,"error":{"code":`...), string(e.Error.Code))
		dst = appendString(append(dst, `,"message":`...), e.Error.Message)
		dst = strconv.AppendBool(append(dst, `},"retrying":`...), e.Retrying)
		return w.appendCodeFields(dst, e.Logs, e.QueuedMs)
	}
	e.header().At = FormatTime(w.at(e.header().Time))
	w.tmp.Reset()
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.tmp)
		// Messages quote expressions with < and >; HTML escaping would
		// only make them unreadable.
		w.enc.SetEscapeHTML(false)
	}
	if err := w.enc.Encode(e); err != nil {
		return nil, err
	}
	return append(dst, w.tmp.Bytes()...), nil
}

// appendCodeFields ends a node.completed or node.failed line with a code
// node's logs and queuedMs, when set.
func (w *Writer) appendCodeFields(dst []byte, logs json.RawMessage, queuedMs int64) ([]byte, error) {
	if len(logs) > 0 {
		var err error
		if dst, err = w.appendRaw(append(dst, `,"logs":`...), logs); err != nil {
			return nil, err
		}
	}
	if queuedMs != 0 {
		dst = strconv.AppendInt(append(dst, `,"queuedMs":`...), queuedMs, 10)
	}
	return append(dst, "}\n"...), nil
}

// appendHeader writes the fields every event starts with, and leaves the
// object open.
func (w *Writer) appendHeader(dst []byte, h *Header) []byte {
	dst = append(dst, w.prefix(h.Type)...)
	dst = w.appendTime(dst, w.at(h.Time))
	return append(dst, '"')
}

// at returns the time to stamp on an event that happened at t (zero: now),
// in UTC: t, or the last line's time if t is earlier (an event emitted late,
// a clock stepped back), so that a stream's times never go backwards.
func (w *Writer) at(t time.Time) time.Time {
	if t.IsZero() {
		t = w.now()
	}
	if t.Before(w.lastAt) {
		t = w.lastAt
	}
	w.lastAt = t
	return t.UTC()
}

// prefix returns the start of typ's lines up to the time, made once a
// stream: the version, the type and the execution id never change within
// one, and escaping them anew on every line was 3% of what a chain node
// cost in all (BenchmarkInProcess). A stream has a handful of types, all
// this package's.
func (w *Writer) prefix(typ string) []byte {
	for _, p := range w.prefixes {
		if p.typ == typ {
			return p.b
		}
	}
	b := strconv.AppendInt([]byte(`{"version":`), Version, 10)
	b = appendString(append(b, `,"type":`...), typ)
	b = appendString(append(b, `,"executionId":`...), w.id)
	b = append(b, `,"at":"`...)
	w.prefixes = append(w.prefixes, linePrefix{typ, b})
	return b
}

// linePrefix is the start of one event type's lines (Writer.prefix).
type linePrefix struct {
	typ string
	b   []byte
}

// appendTime appends t (UTC) in timeLayout. Formatting a time was a tenth
// of what an event cost; the part up to the second is kept and reused.
func (w *Writer) appendTime(dst []byte, t time.Time) []byte {
	if sec := t.Unix(); sec != w.stampSec || w.stamp == nil {
		w.stamp = t.AppendFormat(w.stamp[:0], timeLayout[:len("2006-01-02T15:04:05")])
		w.stampSec = sec
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(append(dst, w.stamp...), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

func appendNode(dst []byte, id, typ string, attempt int) []byte {
	dst = appendString(append(dst, `,"nodeId":`...), id)
	dst = appendString(append(dst, `,"nodeType":`...), typ)
	return strconv.AppendInt(append(dst, `,"attempt":`...), int64(attempt), 10)
}

// appendRaw appends raw compacted, as encoding/json writes a RawMessage;
// invalid JSON is an error.
func (w *Writer) appendRaw(dst []byte, raw []byte) ([]byte, error) {
	w.tmp.Reset()
	if err := json.Compact(&w.tmp, raw); err != nil {
		return nil, err
	}
	return append(dst, w.tmp.Bytes()...), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted as a JSON string, exactly as
// encoding/json writes it with HTML escaping off (a result is not HTML:
// '<' is one byte, not six). The engine's encoder of author values writes
// strings with it, so that the stream and what is sized agree.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off: invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// escapedLen is the length of b inside a JSON string written by
// encoding/json with HTML escaping on (as the Lambda runtime writes a
// buffered response's body). b is valid UTF-8.
func escapedLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			n += 6 // U+2028, U+2029
			i += 2
		default:
			n++
		}
	}
	return n
}

// Truncated is the marker that replaces a JSON value of more than limit
// bytes: {"$truncated":true,"bytes":N,"preview":"<start of the JSON>"}. The
// preview is cut on a character boundary and shrunk until the marker itself
// fits in limit, since escaping can make it longer than the bytes it shows.
// With a limit too small for any marker, the marker has an empty preview.
func Truncated(b []byte, limit int) json.RawMessage {
	return TruncatedPrefix(b, len(b), limit)
}

// TruncatedPrefix is Truncated for a value too large to encode whole: b is
// the start of its JSON (limit/2 bytes of it are enough) and total the
// length of all of it.
func TruncatedPrefix(b []byte, total, limit int) json.RawMessage {
	n := max(0, min(len(b), limit/2))
	for {
		for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
			n--
		}
		// HTML escaping off, as the events are written: a preview of
		// JSON holding < would take six bytes for each, and the cut
		// below assumes at most two.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(map[string]any{"$truncated": true, "bytes": total, "preview": string(b[:n])})
		m := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if len(m) <= limit || n == 0 {
			return m
		}
		n -= max(1, (len(m)-limit+1)/2)
		n = max(n, 0)
	}
}

// cutText returns s cut to its first keep bytes (on a character
// boundary) and marked as a text of n bytes.
func cutText(s string, keep, n int) string {
	keep = max(0, min(keep, len(s)))
	for keep > 0 && keep < len(s) && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + truncatedText(n)
}

// cutFrom reports the original length of a text cutText already marked.
func cutFrom(s string) (int, bool) {
	i := strings.LastIndex(s, "…[$truncated: ")
	if i < 0 || !strings.HasSuffix(s, " bytes]") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s[i+len("…[$truncated: "):], " bytes]"))
	return n, err == nil
}

// prefixWithin returns the length of the longest prefix of s whose JSON
// encoding (quotes excluded) takes at most budget bytes.
func prefixWithin(s string, budget int) int {
	used := 0
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		w := size
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			w = 2
		case c < 0x20 || c == '\u2028' || c == '\u2029' || (c == utf8.RuneError && size == 1):
			w = 6
		}
		if used+w > budget {
			return i
		}
		used += w
		i += size
	}
	return len(s)
}

// truncatedText is what ends a text cut to fit an event: the marker word of
// Truncated, and the text's original length.
func truncatedText(n int) string {
	return "…[$truncated: " + strconv.Itoa(n) + " bytes]"
}

// shrink cuts e's longest texts, and replaces its traced value by the
// Truncated marker, until its line fits in limit bytes. Each field is cut
// at most once, by at least the excess, so this ends; if the header alone
// is over limit the line stays over it.
func (w *Writer) shrink(e Event, limit int) ([]byte, error) {
	texts, raw := fields(e, &w.texts)
	rawDone := raw == nil
	logs := logsOf(e)
	for {
		line, err := w.appendEvent(w.line[:0], e)
		if err != nil {
			return nil, err
		}
		w.line = line
		excess := len(line) - limit
		if excess <= 0 {
			return line, nil
		}
		longest := -1
		for i, p := range texts {
			if p != nil && (longest < 0 || len(*p) > len(*texts[longest])) {
				longest = i
			}
		}
		if !rawDone && (longest < 0 || len(*raw) >= len(*texts[longest])) {
			var c bytes.Buffer
			_ = json.Compact(&c, *raw) // it encoded above, so it is valid
			*raw = Truncated(c.Bytes(), c.Len()-excess)
			rawDone = true
			continue
		}
		if logs != nil && (longest < 0 || len(*logs) >= len(*texts[longest])) {
			// A code node's logs, each cut as traced, can still make
			// the line too long with the output.
			var c bytes.Buffer
			_ = json.Compact(&c, *logs)
			*logs = Truncated(c.Bytes(), max(c.Len()-excess, 0))
			logs = nil
			continue
		}
		if longest < 0 {
			return line, nil
		}
		p := *texts[longest]
		n := len(p)
		if orig, ok := cutFrom(p); ok {
			n = orig
			p = p[:strings.LastIndex(p, "…[$truncated: ")]
		}
		budget := len(appendString(nil, p)) - 2 - excess - len(truncatedText(n))
		*texts[longest] = cutText(p, prefixWithin(p, budget), n)
		texts[longest] = nil
	}
}

// fields returns the texts of e that may be cut, in buf (so that the hot
// path allocates nothing), and its traced value.
func fields(e Event, buf *[6]*string) (texts []*string, raw *json.RawMessage) {
	t := buf[:0]
	switch e := e.(type) {
	case *NodeStarted:
		if e.Role != nil {
			t = append(t, &e.Role.Requested)
		}
		return append(t, &e.NodeID, &e.NodeType), rawOf(&e.Input)
	case *NodeCompleted:
		return append(t, &e.NodeID, &e.NodeType), rawOf(&e.Output)
	case *NodeFailed:
		return append(t, &e.Error.Message, (*string)(&e.Error.Code), &e.NodeID, &e.NodeType), nil
	case *NodeSuspended:
		return append(t, &e.NodeID, &e.NodeType, &e.Reason, &e.Request.Action, &e.Request.Resource), nil
	case *PermissionDecision:
		return append(t, &e.NodeID, &e.Action, &e.Resource, &e.Decision, &e.Source, &e.Reason), nil
	case *Error:
		return append(t, &e.Error.Message, &e.Error.NodeID), nil
	}
	return nil, nil
}

// logsOf returns a code node's logs in e, nil when it has none.
func logsOf(e Event) *json.RawMessage {
	switch e := e.(type) {
	case *NodeCompleted:
		return rawOf(&e.Logs)
	case *NodeFailed:
		return rawOf(&e.Logs)
	}
	return nil
}

func rawOf(r *json.RawMessage) *json.RawMessage {
	if len(*r) == 0 {
		return nil
	}
	return r
}
