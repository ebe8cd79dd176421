package llm

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrInvalidReply means the model's replies could not be turned into the
// requested structure, even after repair and retries.
var ErrInvalidReply = errors.New("llm: invalid reply")

// Client is the seam to a chat model. The OpenAI implementation (go-openai)
// is the only production one; tests drive it against the fake server in
// internal/fakellm over real HTTP.
type Client interface {
	// Structured sends the conversation and asks for a reply object matching
	// schema (Contract 3 (docs/contracts.md): json_schema with strict mode, falling back to
	// json_object with the schema in the system message). It returns the
	// validated JSON object, the assistant's raw reply and the token usage of
	// every call it made (retries included).
	Structured(ctx context.Context, req StructuredRequest) (StructuredReply, error)
}

// StructuredRequest is one structured call.
type StructuredRequest struct {
	Model    string
	Messages []messages.ChatMessage // system/user/assistant
	Schema   Schema
	// MaxTokens caps the reply; zero means the server's default.
	MaxTokens int
	Sampling
	// Check, if set, judges a reply that fits the schema (its JSON): an
	// error is sent back to the model as a reply that does not fit is,
	// within the call's corrections (an empty program, say, which a schema
	// sent to every server cannot refuse).
	Check func(json.RawMessage) error
}

// Sampling are a job's sampling settings (options.temperature, top_p,
// seed), sent with every call of the job; nil leaves the server's default.
type Sampling struct {
	Temperature *float64
	TopP        *float64
	Seed        *int64
}

// Schema names a reply structure (one of the names of Contract 3 (docs/contracts.md)) and gives
// its JSON Schema.
type Schema struct {
	Name   string
	Schema json.RawMessage
	// Optional are top-level properties a reply may leave out although
	// the schema sent lists them as required (strict mode wants every
	// property there): a model outside strict mode omits them, and the
	// reply is taken without them rather than sent back.
	Optional []string
}

// StructuredReply is a validated reply.
type StructuredReply struct {
	JSON  json.RawMessage // the reply object, validated against the schema's required fields
	Raw   string          // the assistant message as received (last attempt)
	Usage messages.Usage  // all calls, retries included
}
