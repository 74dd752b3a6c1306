package wftest

import (
	"encoding/json"
	"net/http"

	"github.com/runnerd/lambda-runner/protocol"
)

// The model mocks speak each provider's own wire format, so that the
// runner's real adapters (its SDK clients, retries and error mapping) read
// them: OpenAI Chat Completions, Anthropic Messages, Bedrock Converse.

// wireCall is a tool call of a reply, named as the model was shown it.
type wireCall struct {
	id, name string
	args     json.RawMessage
}

// retryAfterMs is the wait a mocked 429 or 5xx asks for: the clients
// retry as they would a real one, without the tests waiting their backoff.
const retryAfterMs = "1"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeModelError answers a failed call as provider does.
func writeModelError(w http.ResponseWriter, provider string, status int, msg string) {
	if status == http.StatusTooManyRequests || status >= 500 {
		w.Header().Set("retry-after-ms", retryAfterMs)
		w.Header().Set("x-amz-retry-after", retryAfterMs)
	}
	switch provider {
	case "anthropic":
		typ := "api_error"
		switch {
		case status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case status == http.StatusUnauthorized:
			typ = "authentication_error"
		case status < 500:
			typ = "invalid_request_error"
		}
		writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	case "bedrock":
		typ := "InternalServerException"
		switch {
		case status == http.StatusTooManyRequests:
			typ = "ThrottlingException"
		case status == http.StatusForbidden || status == http.StatusUnauthorized:
			typ = "AccessDeniedException"
		case status == http.StatusServiceUnavailable:
			typ = "ServiceUnavailableException"
		case status < 500:
			typ = "ValidationException"
		}
		w.Header().Set("X-Amzn-ErrorType", typ)
		writeJSON(w, status, map[string]any{"message": msg})
	default:
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "mock_error", "param": nil, "code": nil}})
	}
}

// writeModelReply answers a call with rep as e's provider does.
func writeModelReply(w http.ResponseWriter, e protocol.Model, rep Reply, calls []wireCall) {
	text := ""
	if rep.Text != nil {
		text = *rep.Text
	}
	var in, out int64
	if rep.Usage != nil {
		in, out = rep.Usage.InputTokens, rep.Usage.OutputTokens
	}
	switch e.Provider {
	case "anthropic":
		content := []any{}
		if rep.Text != nil || len(calls) == 0 {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		for _, c := range calls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args})
		}
		stop := "end_turn"
		if len(calls) > 0 {
			stop = "tool_use"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_mock", "type": "message", "role": "assistant", "model": e.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
	case "bedrock":
		content := []any{}
		if rep.Text != nil || len(calls) == 0 {
			content = append(content, map[string]any{"text": text})
		}
		for _, c := range calls {
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.id, "name": c.name, "input": c.args}})
		}
		stop := "end_turn"
		if len(calls) > 0 {
			stop = "tool_use"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop,
			"usage":      map[string]any{"inputTokens": in, "outputTokens": out, "totalTokens": in + out},
			"metrics":    map[string]any{"latencyMs": 1},
		})
	default:
		msg := map[string]any{"role": "assistant", "content": nil}
		if rep.Text != nil || len(calls) == 0 {
			msg["content"] = text
		}
		finish := "stop"
		if len(calls) > 0 {
			tcs := make([]any, len(calls))
			for i, c := range calls {
				tcs[i] = map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": string(c.args)}}
			}
			msg["tool_calls"] = tcs
			finish = "tool_calls"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": e.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		})
	}
}
