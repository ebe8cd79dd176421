package fakellm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The server's own wire structs, rather than go-openai's: the fake should
// accept what any OpenAI-compatible client sends, not what one SDK models.

type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools"`
	ResponseFormat      *wireFormat   `json:"response_format"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	Temperature         *float64      `json:"temperature"`
	TopP                *float64      `json:"top_p"`
	Seed                *int64        `json:"seed"`
}

type wireFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Strict bool            `json:"strict"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string, null, or content parts
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wireResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             wireUsage    `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type wireChoice struct {
	Index        int            `json:"index"`
	Message      wireOutMessage `json:"message"`
	FinishReason string         `json:"finish_reason"`
}

type wireOutMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"` // null with tool calls, as OpenAI sends
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// request converts the wire form. It always returns the Request (so that a
// malformed one is still recorded) and an error for what a real server would
// reject.
func (wr wireRequest) request(authorization string) (Request, error) {
	req := Request{
		Model:     wr.Model,
		Format:    FormatText,
		MaxTokens: wr.MaxTokens,
		APIKey:    strings.TrimPrefix(authorization, "Bearer "),
		// Sampling settings as sent; a client that cannot send 0 sends the
		// smallest float32 above it (go-openai): what the server reads.
		Temperature: wr.Temperature,
		TopP:        wr.TopP,
		Seed:        wr.Seed,
	}
	if wr.MaxCompletionTokens > 0 {
		req.MaxTokens = wr.MaxCompletionTokens
	}
	var errs []error
	for i, m := range wr.Messages {
		content, err := messageText(m.Content)
		if err != nil {
			errs = append(errs, fmt.Errorf("messages[%d].content: %w", i, err))
		}
		if err := contentRequired(m); err != nil {
			errs = append(errs, fmt.Errorf("messages[%d]: %w", i, err))
		}
		msg := Message{Role: m.Role, Content: content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if wr.Model == "" {
		errs = append(errs, errors.New("model is required"))
	}
	if len(wr.Messages) == 0 {
		errs = append(errs, errors.New("messages must not be empty"))
	}

	if f := wr.ResponseFormat; f != nil && f.Type != "" && f.Type != FormatText {
		req.Format = f.Type
		switch f.Type {
		case FormatJSONSchema:
			if f.JSONSchema == nil || f.JSONSchema.Name == "" {
				errs = append(errs, errors.New("response_format.json_schema.name is required"))
			} else {
				req.SchemaName = f.JSONSchema.Name
				req.Schema = f.JSONSchema.Schema
				req.Strict = f.JSONSchema.Strict
			}
		case FormatJSONObject:
		default:
			errs = append(errs, fmt.Errorf("response_format.type %q is not one of text, json_object, json_schema", f.Type))
		}
	}
	if req.Format != FormatJSONSchema {
		req.SchemaName = schemaNameFromSystem(req.Messages)
	}
	return req, errors.Join(errs...)
}

// messageText reads a message content: a string, null, or a list of parts
// whose text parts are joined.
// contentRequired is OpenAI's rule on a message without content (absent
// or null, as go-openai sends an empty string): only an assistant message
// with tool calls may have none. A client that sends an empty tool result
// or an empty assistant turn gets the 400 the real API answers.
func contentRequired(m wireMessage) error {
	if len(m.Content) != 0 && string(m.Content) != "null" {
		return nil
	}
	switch {
	case m.Role == "assistant" && len(m.ToolCalls) > 0:
		return nil
	case m.Role == "assistant":
		return errors.New("an assistant message needs content or tool_calls")
	}
	return fmt.Errorf("a %s message needs content (got none)", m.Role)
}

func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// schemaNameFromSystem finds the "Schema name: <name>" line that
// internal/llm puts in the system message when it cannot use json_schema.
func schemaNameFromSystem(msgs []Message) string {
	const prefix = "Schema name:"
	for _, m := range msgs {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		for line := range strings.Lines(m.Content) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				if name := strings.TrimSpace(rest); name != "" {
					return name
				}
			}
		}
	}
	return NoSchema
}

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// writeError writes an error in OpenAI's shape.
func writeError(w http.ResponseWriter, status int, param, msg string) {
	var e wireError
	e.Error.Message = msg
	e.Error.Type = "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		e.Error.Type = "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code := "invalid_api_key"
		e.Error.Code = &code
	case status >= 500:
		e.Error.Type = "server_error"
	}
	if param != "" {
		e.Error.Param = &param
	}
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "fakellm: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
