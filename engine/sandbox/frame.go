package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/runnerd/lambda-runner/engine/jsonweight"
	"io"
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
	// Input is the argument as JSON ("null" when empty).
	Input          json.RawMessage `json:"input"`
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

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// ErrFrameTooLarge is a frame whose header announces more than the reader
// accepts: it is refused before anything is allocated for it.
var ErrFrameTooLarge = fmt.Errorf("sandbox: frame too large")

// ReadFrame reads one frame of at most limit bytes into v.
func ReadFrame(r io.Reader, limit int64, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n > limit {
		return ErrFrameTooLarge
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
		return ErrFrameTooLarge
	}
	return json.Unmarshal(b, v)
}
