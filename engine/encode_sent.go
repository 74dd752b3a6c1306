package engine

import (
	"github.com/runnerd/lambda-runner/engine/authorjson"
	"github.com/runnerd/lambda-runner/engine/models"
)

// The SDKs behind model and tool calls encode a request themselves, with
// encoding/json's HTML escaping (a '<' is six bytes, \u003c) or close to
// it. What they will write of the author's parts is sized here as that
// escaping writes it and charged to the execution's memory budget before
// the call (chargeAuthor, as encodeAuthor charges what the runner encodes
// itself), held until the call returns: sixteen model nodes whose prompt
// is 4 MB of '<' hold 24 MB each while their requests are written, and
// that is counted (times what the SDK holds while it writes it) before any
// of it is allocated.

// What an SDK holds while it writes a request, per byte written, at most:
// the body, the buffers it grows through and the copies it keeps for a
// retry. Measured with 16 MB of prompts of control characters, quotes and
// U+2028 (TestHostileModelPromptEncoding): openai-go 6.6–7.7 times,
// anthropic-sdk-go 3.2–6, Bedrock's 1.7; the MCP client (encoding/json) 2.5.
const (
	modelRequestHeld = 10 // above the most measured, for the collector's lag
	toolArgsHeld     = 4
)

// modelRequestSize is what a provider's SDK writes of req, at least: its
// texts escaped, each turn's and tool's framing at a small constant.
func modelRequestSize(req models.Request) int64 {
	n := authorjson.SentStringSize(req.System) + int64(len(req.JSONSchema))
	for _, m := range req.Messages {
		n += authorjson.SentStringSize(m.Content) + authorjson.SentStringSize(m.ToolCallID) + 32
		for _, tc := range m.ToolCalls {
			n += authorjson.SentStringSize(tc.ID) + authorjson.SentStringSize(tc.Name) + int64(len(tc.Arguments)) + 32
		}
	}
	for _, t := range req.Tools {
		n += authorjson.SentStringSize(t.Name) + authorjson.SentStringSize(t.Description) + int64(len(t.InputSchema)) + 32
	}
	return n
}

// sentValueSize is v's JSON as encoding/json writes it with HTML escaping
// on, refused over limit as sizeAuthor refuses (what names it).
func sentValueSize(what string, v any, limit int64) (int64, error) {
	n, err := sizeAuthor(what, v, limit)
	if err != nil {
		return 0, err
	}
	// v fits in n bytes, so this walk visits fewer than n elements.
	return n + 5*authorjson.HTMLEscaped(v), nil
}

// urlHeld is what net/http holds of a URL per byte as it is written: the
// escaped query, the URL's string, the request line.
const urlHeld = 4
