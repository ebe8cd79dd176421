package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Defaults of OpenAIConfig.
const (
	defaultMaxRetries     = 5
	defaultInitialBackoff = 500 * time.Millisecond
	defaultMaxBackoff     = 30 * time.Second
	defaultRequestTimeout = 120 * time.Second
	defaultMaxCorrections = 2
)

// OpenAIConfig configures NewOpenAI. The zero value talks to api.openai.com
// without a key, with the defaults documented on each field.
type OpenAIConfig struct {
	// BaseURL is the API root of any OpenAI-compatible server, usually
	// OPENAI_BASE_URL (e.g. "http://127.0.0.1:11434/v1"). Empty means
	// go-openai's default, https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends none (local servers).
	APIKey string
	// HTTPClient makes the requests. Nil means a new http.Client on
	// http.DefaultTransport. Leave its Timeout zero: RequestTimeout bounds
	// each attempt.
	HTTPClient *http.Client
	// MaxRetries is how many times one request is retried after a 408, 409,
	// 429, 5xx, timeout or network error. Zero means 5; negative means none.
	MaxRetries int
	// InitialBackoff is the wait before the first retry; it doubles on each
	// retry, with jitter. Zero means 500ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the backoff. It is also the longest Retry-After waited
	// out in-process: a longer one is returned as CallError.RetryAfter at
	// once, so a worker can reschedule instead of holding a slot. Zero means 30s.
	MaxBackoff time.Duration
	// RequestTimeout bounds each HTTP attempt (not the whole call with its
	// retries; use the context for that). Zero means 120s.
	RequestTimeout time.Duration
	// MaxCorrections is how many times Structured asks again, with the
	// invalid reply and a corrective message, when a reply cannot be turned
	// into the schema's object. Zero means 2; negative means none.
	MaxCorrections int
	// MaxReplyBytes caps the HTTP body of each reply. A longer one fails the
	// call at once, permanently (ErrReplyTooLarge), instead of growing the
	// worker's memory. Zero means 4 MiB; negative means no cap.
	MaxReplyBytes int64
	// Clock times backoff waits and reads Retry-After dates. Nil means the
	// system clock.
	Clock Clock
	// Logger receives retries and fallbacks. Nil discards them.
	Logger *slog.Logger
	// Observer receives each attempt's outcome, latency and tokens
	// (metrics.Model). Nil records nothing.
	Observer Observer
}

// OpenAI is the Client on an OpenAI-compatible chat completions API, via
// go-openai. It is safe for concurrent use.
type OpenAI struct {
	api            *openai.Client
	log            *slog.Logger
	clock          Clock
	maxRetries     int
	maxCorrections int
	initialBackoff time.Duration
	maxBackoff     time.Duration
	timeout        time.Duration
	maxReply       int64
	observer       Observer

	mu sync.Mutex
	// formats remembers, per model, the strongest response_format the server
	// accepted after refusing a stronger one, so later calls skip the refusal.
	formats map[string]responseFormat
}

var _ Client = (*OpenAI)(nil)

// NewOpenAI returns a client for cfg, or an error naming the invalid field.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"InitialBackoff", cfg.InitialBackoff}, {"MaxBackoff", cfg.MaxBackoff}, {"RequestTimeout", cfg.RequestTimeout}} {
		if d.v < 0 {
			return nil, fmt.Errorf("llm: OpenAIConfig.%s is negative (%s)", d.name, d.v)
		}
	}
	c := &OpenAI{
		log:            cfg.Logger,
		clock:          cfg.Clock,
		maxRetries:     orDefault(cfg.MaxRetries, defaultMaxRetries),
		maxCorrections: orDefault(cfg.MaxCorrections, defaultMaxCorrections),
		initialBackoff: orDefault(cfg.InitialBackoff, defaultInitialBackoff),
		maxBackoff:     orDefault(cfg.MaxBackoff, defaultMaxBackoff),
		timeout:        orDefault(cfg.RequestTimeout, defaultRequestTimeout),
		maxReply:       orDefault(cfg.MaxReplyBytes, defaultMaxReplyBytes),
		formats:        make(map[string]responseFormat),
		observer:       cfg.Observer,
	}
	if c.observer == nil {
		c.observer = nopObserver{}
	}
	if c.initialBackoff > c.maxBackoff {
		return nil, fmt.Errorf("llm: OpenAIConfig.InitialBackoff (%s) exceeds MaxBackoff (%s)", c.initialBackoff, c.maxBackoff)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.clock == nil {
		c.clock = systemClock{}
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("llm: OpenAIConfig.BaseURL %q: want an http(s) URL such as http://127.0.0.1:8000/v1", cfg.BaseURL)
		}
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc.HTTPClient = recordingDoer{hc: hc, maxReply: c.maxReply}
	c.api = openai.NewClientWithConfig(oc)
	return c, nil
}

// orDefault maps zero to def and negative to zero ("none").
func orDefault[T int | int64 | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// responseFormat is how a structured call asks for JSON, strongest first.
type responseFormat int

const (
	formatJSONSchema responseFormat = iota // response_format json_schema, strict
	formatJSONObject                       // response_format json_object, schema in the system message
	formatNone                             // no response_format, schema in the system message
)

func (f responseFormat) String() string {
	return [...]string{"json_schema", "json_object", "none"}[f]
}

// schemaNamePrefix starts the line that names the schema in the system
// message of json_object and unformatted calls. internal/fakellm routes such
// requests by this line, as it routes json_schema ones by json_schema.name.
const schemaNamePrefix = "Schema name: "

// schemaInstruction is the system-message text that replaces json_schema
// when the server refuses it.
func schemaInstruction(s Schema) string {
	return "Reply with a single JSON object and nothing else: no prose, no markdown code fences.\n" +
		schemaNamePrefix + s.Name + "\n" +
		"The object must match this JSON Schema (every property is required):\n" +
		string(s.Schema)
}

// Structured implements Client.
//
// On error the reply still carries Raw (the last reply, if any) and the Usage
// of the calls made, so callers can account for them.
func (c *OpenAI) Structured(ctx context.Context, req StructuredRequest) (StructuredReply, error) {
	var out StructuredReply
	if req.Model == "" {
		return out, errors.New("llm: structured call without a model")
	}
	node, err := compileSchema(req.Schema)
	if err != nil {
		return out, fmt.Errorf("llm: %w", err)
	}
	name := req.Schema.Name
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+2*c.maxCorrections)
	for _, m := range req.Messages {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	for try := 0; ; try++ {
		choice, err := c.structuredOnce(ctx, req, msgs, &out.Usage)
		if err != nil {
			return out, fmt.Errorf("llm: %s call: %w", name, err)
		}
		content := choice.Message.Content
		out.Raw = content
		obj, perr := parseReply(content, name, node)
		if perr == nil && req.Check != nil {
			perr = req.Check(obj)
		}
		if perr == nil {
			out.JSON = obj
			return out, nil
		}
		truncated := choice.FinishReason == openai.FinishReasonLength
		c.observer.InvalidReply(modelLabel(ctx, req.Model), stageOf(ctx))
		if choice.Message.Refusal != "" {
			// Asking again gets the refusal again, at a price.
			return out, fmt.Errorf("%w for schema %s: the model refused: %s", ErrInvalidReply, name, choice.Message.Refusal)
		}
		if try >= c.maxCorrections {
			return out, fmt.Errorf("%w for schema %s (%d replies): %w", ErrInvalidReply, name, try+1, perr)
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, "llm: invalid reply; asking again",
			slog.String("schema", name), slog.String("model", req.Model), slog.Bool("truncated", truncated),
			slog.String("error", perr.Error()))
		if strings.TrimSpace(content) != "" {
			// An empty one is left out: an assistant message with neither
			// content nor tool calls is refused by the API (400), which
			// would fail the stage for good.
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content})
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: correction(name, perr, truncated)})
	}
}

// correction is the user message sent after an invalid reply.
func correction(schema string, err error, truncated bool) string {
	msg := fmt.Sprintf("Your reply was not valid JSON for schema %s: %v. Reply with only the JSON object.", schema, err)
	if truncated {
		msg = "Your reply was cut off (it hit the token limit). " + msg + " Keep it shorter."
	}
	return msg
}

// structuredOnce makes one structured request, stepping down the response
// formats while the server refuses them.
func (c *OpenAI) structuredOnce(ctx context.Context, req StructuredRequest, msgs []openai.ChatCompletionMessage, usage *messages.Usage) (openai.ChatCompletionChoice, error) {
	f := c.format(req.Model)
	for {
		choice, err := c.send(ctx, c.structuredRequest(req, msgs, f), usage)
		if err == nil || f == formatNone || !refusesFormat(err) {
			return choice, err
		}
		next := f + 1
		c.log.LogAttrs(ctx, slog.LevelWarn, "llm: server refused response_format; falling back",
			slog.String("model", req.Model), slog.String("from", f.String()), slog.String("to", next.String()),
			slog.String("error", err.Error()))
		c.setFormat(req.Model, next)
		f = next
	}
}

func (c *OpenAI) format(model string) responseFormat {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.formats[model]
}

func (c *OpenAI) setFormat(model string, f responseFormat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.formats[model] = max(c.formats[model], f) // concurrent fallbacks only ever step down
}

// refusesFormat reports whether err is a server rejecting response_format
// (e.g. vLLM or llama.cpp builds without json_schema support) rather than
// the request as a whole.
func refusesFormat(err error) bool {
	var ce *CallError
	if !errors.As(err, &ce) || (ce.StatusCode != http.StatusBadRequest && ce.StatusCode != http.StatusUnprocessableEntity) {
		return false
	}
	text := strings.ToLower(ce.Message + " " + ce.Error())
	return strings.Contains(text, "response_format") || strings.Contains(text, "json_schema") ||
		strings.Contains(text, "response format")
}

func (c *OpenAI) structuredRequest(req StructuredRequest, msgs []openai.ChatCompletionMessage, f responseFormat) openai.ChatCompletionRequest {
	r := openai.ChatCompletionRequest{Model: req.Model, Messages: msgs}
	setMaxTokens(&r, req.MaxTokens)
	setSampling(&r, req.Sampling)
	switch f {
	case formatJSONSchema:
		r.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   req.Schema.Name,
				Strict: true,
				Schema: req.Schema.Schema,
			},
		}
	case formatJSONObject:
		r.Messages = withSystemText(msgs, schemaInstruction(req.Schema))
		r.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	default:
		r.Messages = withSystemText(msgs, schemaInstruction(req.Schema))
	}
	return r
}

// withSystemText appends text to the leading system message, or adds one.
func withSystemText(msgs []openai.ChatCompletionMessage, text string) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == openai.ChatMessageRoleSystem {
		first := msgs[0]
		first.Content += "\n\n" + text
		return append(append(out, first), msgs[1:]...)
	}
	out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: text})
	return append(out, msgs...)
}

// setMaxTokens sets the reply cap. go-openai rejects max_tokens for OpenAI's
// reasoning models, while many OpenAI-compatible servers only know max_tokens.
func setMaxTokens(r *openai.ChatCompletionRequest, n int) {
	if n <= 0 {
		return
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(r.Model, p) {
			r.MaxCompletionTokens = n
			return
		}
	}
	//lint:ignore SA1019 max_tokens is what most OpenAI-compatible servers understand.
	r.MaxTokens = n
}

// greedyEpsilon stands for a temperature or top_p of 0. Not the smallest
// float32 (1.4e-45), which go-openai's maintainers suggest: llama.cpp (and
// so Ollama) samples greedily only at a temperature of 0 or less and
// divides the logits by any other, which overflows at 1.4e-45 and leaves
// NaN probabilities. 1e-6 is under vLLM's greedy threshold (1e-5), and a
// division llama.cpp survives with the same greedy choice.
const greedyEpsilon = 1e-6

// setSampling sets a job's sampling settings. go-openai omits a zero
// temperature or top_p (omitempty on float32: sashabaranov/go-openai#9),
// so an explicit 0 goes as greedyEpsilon, which every server samples
// greedily.
func setSampling(r *openai.ChatCompletionRequest, s Sampling) {
	f32 := func(v float64) float32 {
		if v == 0 {
			return greedyEpsilon
		}
		return float32(v)
	}
	if s.Temperature != nil {
		r.Temperature = f32(*s.Temperature)
	}
	if s.TopP != nil {
		r.TopP = f32(*s.TopP)
	}
	if s.Seed != nil {
		seed := int(*s.Seed)
		r.Seed = &seed
	}
}

// ---- Chat with tools (Contract 7 (docs/contracts.md), the agent backend) ----

// ChatRequest is one turn of a tool-using conversation.
type ChatRequest struct {
	Model     string
	Messages  []ChatMessage
	Tools     []Tool
	MaxTokens int // zero means the server's default
	Sampling
}

// ChatMessage is a conversation message that may carry tool calls (role
// assistant) or a tool's result (role tool, with ToolCallID).
type ChatMessage struct {
	Role       string // system, user, assistant or tool
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Tool is a function the model may call; Parameters is its JSON Schema (nil
// means no parameters).
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is one call the model asked for. Arguments is the model's JSON
// text, unvalidated: the tool decides what to do with bad arguments.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ChatReply is the model's turn: content, tool calls, or both. No tool calls
// ends an agent run (Contract 7 (docs/contracts.md)).
type ChatReply struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        messages.Usage
}

// emptyToolResult is what the model reads of a tool result with no text.
const emptyToolResult = "(empty: the tool returned no output)"

// Chat sends one turn with tools, with the same retries as Structured.
func (c *OpenAI) Chat(ctx context.Context, req ChatRequest) (ChatReply, error) {
	var out ChatReply
	if req.Model == "" {
		return out, errors.New("llm: chat call without a model")
	}
	r := openai.ChatCompletionRequest{Model: req.Model}
	setMaxTokens(&r, req.MaxTokens)
	setSampling(&r, req.Sampling)
	for _, m := range req.Messages {
		if m.Content == "" && len(m.ToolCalls) == 0 && m.Role != openai.ChatMessageRoleTool {
			continue // a turn with nothing in it: the API refuses it (400), and it says nothing
		}
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if om.Content == "" && m.Role == openai.ChatMessageRoleTool {
			om.Content = emptyToolResult // the API needs a tool result's content
		}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID:       tc.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		r.Messages = append(r.Messages, om)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = append(r.Tools, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	choice, err := c.send(ctx, r, &out.Usage)
	if err != nil {
		return out, fmt.Errorf("llm: chat call: %w", err)
	}
	out.Content = choice.Message.Content
	out.FinishReason = string(choice.FinishReason)
	for _, tc := range choice.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}
