package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

type replyKind int

const (
	kindContent   replyKind = iota // an assistant message, finish_reason stop
	kindTruncated                  // an assistant message, finish_reason length
	kindToolCalls                  // tool calls, finish_reason tool_calls
	kindStatus                     // an HTTP error with OpenAI's error body
	kindDrop                       // the connection closed without a response
	kindOversized                  // an assistant message of size bytes, streamed
)

// Reply is one scripted answer. Build it with JSON, Text, Truncated,
// ToolCalls, Status or Drop, and adjust it with Delay and Usage; the methods
// return a modified copy.
type Reply struct {
	kind       replyKind
	content    string
	toolCalls  []ToolCall
	status     int
	retryAfter string
	errMessage string
	size       int64 // content bytes of an Oversized reply
	delay      time.Duration
	usage      *[2]int // prompt, completion tokens; nil means estimated
}

// JSON answers with v marshalled as the message content. A value that does
// not marshal becomes a 500 naming the problem, so a broken script fails the
// call loudly instead of panicking inside the server.
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		return Status(http.StatusInternalServerError, "").ErrorMessage(fmt.Sprintf("fakellm: cannot marshal scripted reply: %v", err))
	}
	return Reply{kind: kindContent, content: string(b)}
}

// Text answers with s as the message content, verbatim: use it for fenced,
// chatty or invalid JSON, or a plain chat answer.
func Text(s string) Reply {
	return Reply{kind: kindContent, content: s}
}

// Truncated answers with content and finish_reason "length", as a model that
// hit max_tokens does. Pass the cut-off text, e.g. `{"code": "import pa`.
func Truncated(content string) Reply {
	return Reply{kind: kindTruncated, content: content}
}

// ToolCalls answers with tool calls (finish_reason "tool_calls") and no content.
func ToolCalls(calls ...ToolCall) Reply {
	return Reply{kind: kindToolCalls, toolCalls: calls}
}

// Call is a tool call whose arguments are args marshalled to JSON (a string
// is used as the arguments text verbatim). The ID is assigned when served.
func Call(name string, args any) ToolCall {
	if s, ok := args.(string); ok {
		return ToolCall{Name: name, Arguments: s}
	}
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte(fmt.Sprintf("%q", err.Error()))
	}
	return ToolCall{Name: name, Arguments: string(b)}
}

// Status answers with an HTTP error and OpenAI's error body. retryAfter, if
// not empty, is sent as the Retry-After header verbatim ("1", or an HTTP date).
func Status(code int, retryAfter string) Reply {
	return Reply{kind: kindStatus, status: code, retryAfter: retryAfter}
}

// Drop closes the connection without answering, like a crashed server or a
// reset connection.
func Drop() Reply {
	return Reply{kind: kindDrop}
}

// Oversized answers with a well-formed reply whose content is n bytes of
// "x", written as it streams (the server never holds it): a model that
// rambles, or a proxy gone wrong, for testing a client's reply cap. The
// server stops writing when the client goes away.
func Oversized(n int64) Reply {
	return Reply{kind: kindOversized, size: n}
}

// Delay makes the server wait d before answering (model latency for demos
// and benchmarks). The wait ends early if the client goes away or the server
// closes.
func (r Reply) Delay(d time.Duration) Reply {
	r.delay = d
	return r
}

// Usage sets the token counts reported for this reply. Without it they are
// estimated as characters/4 of the request's messages and of the reply.
func (r Reply) Usage(promptTokens, completionTokens int) Reply {
	r.usage = &[2]int{promptTokens, completionTokens}
	return r
}

// ErrorMessage sets the error message of a Status reply.
func (r Reply) ErrorMessage(msg string) Reply {
	r.errMessage = msg
	return r
}
