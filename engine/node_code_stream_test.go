package engine

import (
	"bytes"
	"context"
	"testing"

	"github.com/runnerd/lambda-runner/protocol"
)

// A traced code node's logs reach the client's stream, as written by the
// protocol's writer (its events are encoded by hand, field by field), and
// so does how long a node waited for a worker: here the execution's share
// is one worker, and the second of two parallel nodes waits for the first.
func TestCodeNodeLogsAndQueueOnTheWire(t *testing.T) {
	e, _ := codeEngine(t, Limits{})
	x := prepareReq(t, e, `{"version":1,"trace":true,"workflow":`+codeDoc(`
		{"id":"a","type":"code","with":{"code":"console.log('from a'); const t = Date.now(); while (Date.now() < t + 200) {} return 1"}},
		{"id":"b","type":"code","with":{"code":"console.log('from b'); const t = Date.now(); while (Date.now() < t + 200) {} return 2"}}`)+`}`)
	var buf bytes.Buffer
	x.Run(context.Background(), protocol.NewWriter(&buf, "exec", nil))
	out := buf.String()
	for _, want := range []string{`"logs":["from a"]`, `"logs":["from b"]`, `"queuedMs":`, `"type":"result"`} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("stream without %s:\n%s", want, out)
		}
	}
}
