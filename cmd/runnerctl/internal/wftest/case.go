// Package wftest runs workflow test cases (`runnerctl test`): each case
// runs in process with the runner's own engine, its models, toolsets and
// http nodes answered by mocks served on the loopback at the wire, and
// its result compared with what the case expects. docs/testing.md
// documents the file format.
package wftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runnerd/lambda-runner/protocol"
)

// Case is one test file.
type Case struct {
	// Schema names the editor schema (docs/test.schema.json); ignored.
	Schema string `json:"$schema,omitempty"`
	Name   string `json:"name"`
	// Workflow is a path (relative to the test file) to a bare workflow
	// document or a whole execution request, or an inline document.
	Workflow         json.RawMessage         `json:"workflow"`
	Input            json.RawMessage         `json:"input,omitempty"`
	Runtime          *json.RawMessage        `json:"runtime,omitempty"`
	Permissions      *[]string               `json:"permissions,omitempty"`
	Authorization    *protocol.Authorization `json:"authorization,omitempty"`
	ToolPolicies     *[]protocol.ToolPolicy  `json:"toolPolicies,omitempty"`
	ConsentAvailable *bool                   `json:"consentAvailable,omitempty"`
	Mocks            Mocks                   `json:"mocks"`
	Expect           *Expect                 `json:"expect,omitempty"`
}

// Mocks are what the case's outside calls answer, and the nodes pinned.
type Mocks struct {
	Models []ModelMock         `json:"models,omitempty"`
	Tools  []ToolMock          `json:"tools,omitempty"`
	HTTP   []HTTPMock          `json:"http,omitempty"`
	Nodes  map[string]NodeMock `json:"nodes,omitempty"`
}

// ModelMock is the sequence of replies of the model entry of a role.
type ModelMock struct {
	Role    string  `json:"role"`
	Replies []Reply `json:"replies"`
}

// Reply is one answer of a model: text, tool calls and usage, or an error.
type Reply struct {
	Text      *string     `json:"text,omitempty"`
	ToolCalls []ToolCall  `json:"toolCalls,omitempty"`
	Usage     *Usage      `json:"usage,omitempty"`
	Error     *ReplyError `json:"error,omitempty"`
}

// ToolCall is a tool call in a model reply; Name is "toolset/tool".
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Usage is a reply's token counts.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// ReplyError is a failed reply: its HTTP status and message.
type ReplyError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// ToolMock answers the calls of one tool whose arguments include those
// named (all of them when Arguments is empty).
type ToolMock struct {
	Toolset   string          `json:"toolset"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *ToolError      `json:"error,omitempty"`
}

// ToolError is a tool mock's JSON-RPC error.
type ToolError struct {
	Code    int64  `json:"code,omitempty"`
	Message string `json:"message"`
}

// HTTPMock answers the http node requests whose method and URL match.
type HTTPMock struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// NodeMock pins a node: its output, or its error.
type NodeMock struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  *NodeErrorMock  `json:"error,omitempty"`
}

// NodeErrorMock is a pinned node's failure.
type NodeErrorMock struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Expect is what a case compares; a member left out is not compared.
type Expect struct {
	Status    string                `json:"status,omitempty"`
	Output    json.RawMessage       `json:"output,omitempty"`
	Error     *ExpectError          `json:"error,omitempty"`
	Nodes     map[string]ExpectNode `json:"nodes,omitempty"`
	Decisions []map[string]string   `json:"decisions,omitempty"`
	Calls     *ExpectCalls          `json:"calls,omitempty"`
}

// ExpectError is the execution's expected failure.
type ExpectError struct {
	Code   string `json:"code,omitempty"`
	NodeID string `json:"nodeId,omitempty"`
}

// ExpectNode is a node's expected end.
type ExpectNode struct {
	Status   string          `json:"status,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Attempts *int            `json:"attempts,omitempty"`
	Error    *ExpectError    `json:"error,omitempty"`
}

// ExpectCalls counts the requests sent to each kind of service.
type ExpectCalls struct {
	Models *int `json:"models,omitempty"`
	Tools  *int `json:"tools,omitempty"`
	HTTP   *int `json:"http,omitempty"`
}

// loaded is a case read from its file, its request assembled.
type loaded struct {
	Case
	path string
	src  []byte
	// req is the execution request: the workflow's file (or the inline
	// document) with the case's members over it.
	req protocol.ExecutionRequest
	// wfName and wfSrc locate the workflow document for problems.
	wfName string
	wfSrc  []byte
}

// decodeStrict decodes src into v, refusing unknown members.
func decodeStrict(src []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// load reads the test file at path and assembles its request. A problem
// is an *fileError: the file, or its workflow, is invalid.
func load(path string) (*loaded, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &fileError{name: path, msg: err.Error()}
	}
	l := &loaded{path: path, src: src}
	if err := decodeStrict(src, &l.Case); err != nil {
		return nil, &fileError{name: path, src: src, msg: decodeMessage(err), offset: decodeOffset(err)}
	}
	if l.Name == "" {
		l.Name = filepath.Base(path)
	}
	wf := bytes.TrimSpace(l.Workflow)
	var body []byte
	switch {
	case len(wf) == 0:
		return nil, &fileError{name: path, msg: `"workflow" is required: a path to a workflow or request file, or an inline document`}
	case wf[0] == '"':
		var rel string
		_ = json.Unmarshal(wf, &rel)
		l.wfName = filepath.Join(filepath.Dir(path), filepath.FromSlash(rel))
		if l.wfSrc, err = os.ReadFile(l.wfName); err != nil {
			return nil, &fileError{name: path, msg: fmt.Sprintf("workflow: %v", err)}
		}
		body = l.wfSrc
	default:
		l.wfName, l.wfSrc, body = path, src, wf
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &fileError{name: l.wfName, src: l.wfSrc, msg: "workflow: " + decodeMessage(err), offset: decodeOffset(err)}
	}
	if _, ok := top["workflow"]; ok {
		if err := json.Unmarshal(body, &l.req); err != nil {
			return nil, &fileError{name: l.wfName, msg: "workflow: " + err.Error()}
		}
	} else {
		l.req = protocol.ExecutionRequest{Version: protocol.Version, Workflow: body}
	}
	if l.Input != nil {
		l.req.Input = l.Input
	}
	if l.Runtime != nil {
		l.req.Runtime = protocol.Runtime{}
		if err := json.Unmarshal(*l.Runtime, &l.req.Runtime); err != nil {
			return nil, &fileError{name: path, msg: "runtime: " + err.Error()}
		}
	}
	if l.Permissions != nil {
		l.req.Permissions = *l.Permissions
	}
	if l.Authorization != nil {
		l.req.Authorization = *l.Authorization
	}
	if l.ToolPolicies != nil {
		l.req.ToolPolicies = *l.ToolPolicies
	}
	if l.ConsentAvailable != nil {
		l.req.ConsentAvailable = *l.ConsentAvailable
	}
	return l, nil
}

// fileError is an invalid test file: exit 2.
type fileError struct {
	name   string
	src    []byte
	msg    string
	offset int64 // 0 when unknown
	// problems are the workflow's, as validate prints them.
	problems []string
}

func (e *fileError) Error() string {
	pos := e.name
	if e.offset > 0 && e.src != nil {
		line, col := protocol.LineColumn(e.src, int(e.offset))
		pos = fmt.Sprintf("%s:%d:%d", e.name, line, col)
	}
	return pos + ": " + e.msg
}

// decodeMessage is a decoding error said without Go type names.
func decodeMessage(err error) string {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case asErr(err, &se):
		return "malformed JSON: " + se.Error()
	case asErr(err, &ute):
		return fmt.Sprintf("%s: wrong type (a JSON %s)", ute.Field, ute.Value)
	}
	return err.Error()
}

func decodeOffset(err error) int64 {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case asErr(err, &se):
		return se.Offset
	case asErr(err, &ute):
		return ute.Offset
	}
	return 0
}
