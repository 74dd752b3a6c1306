package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/runnerd/lambda-runner/engine/jsonweight"
)

// The parent and a worker talk over the worker's stdin and stdout in
// frames: a 4-byte big-endian length, then that many bytes of JSON. The
// parent writes one request frame, the worker answers with one reply frame,
// and the worker then waits for the next request (or end of input, on
// which it exits).

// WorkerArg is the first argument a Pool starts its worker executable with
// (worker.Main checks it): the codeworker command, or a test binary whose
// TestMain serves as the worker and otherwise runs its tests.
const WorkerArg = "sandbox-worker"

// Request is one evaluation: the body of a function called with one
// argument, input, and the bounds of what it may return and log.
type Request struct {
	Code string `json:"code"`
	// Input is the argument as JSON ("null" when empty), written into the
	// frame as it is: the caller encodes it (the engine's one encoder for
	// author values, which sized and charged it), and the worker's
	// JSON.parse refuses what is not JSON.
	Input          json.RawMessage `json:"input,omitempty"`
	MaxOutputBytes int64           `json:"maxOutputBytes"`
	MaxLogBytes    int64           `json:"maxLogBytes"`
	// Check asks the worker only to parse Code as it would compile it,
	// and to answer with the first syntax error (Reply.Error) or nothing:
	// Pool.Check, before acceptance.
	Check bool `json:"check,omitempty"`
}

// Reply is the worker's answer to a Request: Output and Logs, or Error.
type Reply struct {
	// Output is the return value as JSON.
	Output json.RawMessage `json:"output,omitempty"`
	// Logs are the lines console.log wrote, in order.
	Logs  []string `json:"logs,omitempty"`
	Error *Error   `json:"error,omitempty"`
}

// WriteFrame writes v as one frame, without HTML escaping (a value is not
// HTML: < is one byte, not six). A Request's Input and a Reply's Output,
// the parts of a frame an author makes large, are written as they are,
// never copied into the frame: the rest is encoded, and the frame goes out
// in three writes.
func WriteFrame(w io.Writer, v any) error {
	var field string
	var raw json.RawMessage
	switch x := v.(type) {
	case Request:
		field, raw, x.Input = "input", x.Input, nil
		v = x
	case *Request:
		r := *x
		field, raw, r.Input = "input", r.Input, nil
		v = r
	case Reply:
		field, raw, x.Output = "output", x.Output, nil
		v = x
	case *Reply:
		r := *x
		field, raw, r.Output = "output", r.Output, nil
		v = r
	}
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(raw) == 0 {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		_, err := w.Write(b)
		return err
	}
	// b is {...}: the raw member goes in before its closing brace.
	b = b[:len(b)-1]
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(append(append(b, '"'), field...), `":`...)
	n := len(b) - 4 + len(raw) + 1
	if int64(n) > 1<<32-1 {
		return ErrFrameTooLarge
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	if _, err := w.Write(b); err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	_, err := w.Write([]byte{'}'})
	return err
}

// ErrFrameTooLarge is a frame whose header announces more than the reader
// accepts: it is refused before anything is allocated for it.
var ErrFrameTooLarge = fmt.Errorf("sandbox: frame too large")

// ErrFrameTooHeavy is a frame within its bytes whose JSON would take more
// than the reader accepts once decoded (many small values, each counted
// for what it holds in memory). It is an ErrFrameTooLarge.
var ErrFrameTooHeavy = fmt.Errorf("%w once decoded", ErrFrameTooLarge)

// ReadFrame reads one frame of at most limit bytes into v.
func ReadFrame(r io.Reader, limit int64, v any) error {
	return readFrame(r, limit, nil, v)
}

// readFrame is ReadFrame that, when admit is set, first asks it for the
// frame's length as its header announces it: nothing is allocated for a
// frame admit refuses, and its error is returned as it is.
func readFrame(r io.Reader, limit int64, admit func(n int64) error, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n > limit {
		return ErrFrameTooLarge
	}
	if admit != nil {
		if err := admit(n); err != nil {
			return err
		}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	// What the reply decodes to is bounded, not only its bytes: a frame of
	// "{}," within the limit decodes to twenty times it.
	if jsonweight.Of(b) > limit {
		return ErrFrameTooHeavy
	}
	return json.Unmarshal(b, v)
}
