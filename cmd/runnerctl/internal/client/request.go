package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runnerd/lambda-runner/protocol"
)

// BuildRequest turns what a user hands runnerctl into an execution request
// body. src is either a whole request (an object with "workflow") or a bare
// workflow document (an object with "nodes"), which is wrapped as version 1.
// input, when not nil, becomes the request's input, replacing any there.
func BuildRequest(src, input []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(src, &top); err != nil || top == nil {
		return nil, errors.New("not a JSON object: want a workflow document or an execution request")
	}
	if input != nil && !json.Valid(input) {
		return nil, errors.New("--input is not JSON")
	}
	if _, whole := top["workflow"]; whole {
		if input == nil {
			return src, nil // sent byte for byte
		}
		top["input"] = json.RawMessage(input)
		return json.Marshal(top)
	}
	if _, ok := top["nodes"]; !ok {
		return nil, errors.New(`neither an execution request (no "workflow") nor a workflow document (no "nodes")`)
	}
	req := map[string]json.RawMessage{
		"version":  json.RawMessage(fmt.Sprint(protocol.Version)),
		"workflow": json.RawMessage(bytes.TrimSpace(src)),
	}
	if input != nil {
		req["input"] = json.RawMessage(input)
	}
	return json.Marshal(req)
}
