package llm

import (
	"context"
	"errors"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Observer receives the measurements of a client's model calls (the
// metrics package's Model). Implementations must be safe for concurrent
// use. Labels it gets are the model, the stage (WithStage; "none" when the
// context has none) and a kind from a small set: never a job ID.
type Observer interface {
	// CallDone is called once per HTTP attempt (retries are attempts):
	// kind is CallOK or an error kind (CallRateLimited, ...); tokens are
	// the reply's usage (zero on errors).
	CallDone(model, stage, kind string, elapsed time.Duration, inputTokens, outputTokens int)
	// InvalidReply is called for each reply that could not be turned into
	// the requested structure (a correction is asked for, or the call fails).
	InvalidReply(model, stage string)
}

// What became of one attempt: the kind given to Observer.CallDone.
const (
	CallOK          = "ok"
	CallRateLimited = "rate_limited" // 429
	CallServerError = "server_error" // 5xx
	CallTimeout     = "timeout"      // the attempt's RequestTimeout, or a 408
	CallNetwork     = "network"      // refused, reset, DNS
	CallClientError = "client_error" // other 4xx, a request go-openai would not send
	CallTooLarge    = "too_large"    // the reply passed MaxReplyBytes
	CallMalformed   = "malformed"    // a 2xx that did not decode, or had no choices
	// InvalidReply is the kind of Observer.InvalidReply in error counts.
	InvalidReply = "invalid_reply"
)

type stageKey struct{}

// WithStage labels the model calls made with ctx by the stage they serve.
func WithStage(ctx context.Context, stage string) context.Context {
	return context.WithValue(ctx, stageKey{}, stage)
}

// stageOf is the stage WithStage put in ctx, or "none".
func stageOf(ctx context.Context) string {
	if s, ok := ctx.Value(stageKey{}).(string); ok && s != "" {
		return s
	}
	return "none"
}

type tableNameKey struct{}

// withTableName labels the model calls made with ctx by the model table's
// name for the model (Router), which the request itself no longer carries
// once it names the endpoint's model: calls, tokens and errors are then
// labelled as cost is, and two rows that send one remote model to
// different endpoints stay apart.
func withTableName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, tableNameKey{}, name)
}

// modelLabel is the model's name in the Observer's figures: the table's
// name withTableName put in ctx, else the name the request sent.
func modelLabel(ctx context.Context, sent string) string {
	if s, ok := ctx.Value(tableNameKey{}).(string); ok && s != "" {
		return s
	}
	return sent
}

// nopObserver records nothing: OpenAIConfig.Observer's default.
type nopObserver struct{}

func (nopObserver) CallDone(string, string, string, time.Duration, int, int) {}
func (nopObserver) InvalidReply(string, string)                              {}

var _ Observer = nopObserver{}

// attemptKind is the Observer kind of a failed attempt.
func attemptKind(err error, a *attempt) string {
	switch {
	case a.tooLarge || errors.Is(err, ErrReplyTooLarge):
		return CallTooLarge
	case errors.Is(err, errNoChoices):
		return CallMalformed
	case !a.sent:
		return CallClientError
	case a.netErr != nil && errors.Is(a.netErr, context.DeadlineExceeded):
		return CallTimeout
	case a.netErr != nil:
		return CallNetwork
	case a.status == http.StatusTooManyRequests:
		return CallRateLimited
	case a.status == http.StatusRequestTimeout:
		return CallTimeout
	case a.status >= 500:
		return CallServerError
	case a.status >= 400:
		return CallClientError
	}
	return CallMalformed
}

// observe tells the Observer what became of one attempt.
func (c *OpenAI) observe(ctx context.Context, model string, began time.Time, err error, a *attempt, usage openai.Usage) {
	kind := CallOK
	if err != nil {
		if ctx.Err() != nil {
			return // abandoned by the caller (shutdown, cancel): no verdict on the model
		}
		kind, usage = attemptKind(err, a), openai.Usage{}
	}
	c.observer.CallDone(modelLabel(ctx, model), stageOf(ctx), kind, c.clock.Now().Sub(began), usage.PromptTokens, usage.CompletionTokens)
}
