package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/modeltable"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrUnknownModel is returned (wrapped) for a call naming a model the
// llm-worker's model table does not have: permanent, since asking again
// names it again.
var ErrUnknownModel = errors.New("llm: model not in the model table")

// ErrPromptTooLong is returned (wrapped) for a prompt that cannot fit the
// model's context (the table's context_tokens): permanent.
var ErrPromptTooLong = errors.New("llm: prompt longer than the model's context")

// Router is the llm-worker's Client over the operator's model table: one
// OpenAI-compatible client per model, each with its own endpoint and key.
// A call names the model as jobs do (messages.Options.Model; empty: the
// table's default); the router sends it under the name the endpoint knows
// (Model.Remote) and prices its usage from the table (Usage.Cost).
type Router struct {
	table   *modeltable.Table
	clients map[string]*OpenAI
	// onUsage sees each call's model, stage (WithStage) and priced usage
	// (the cost metric).
	onUsage func(model, stage string, u messages.Usage)
}

var _ Client = (*Router)(nil)

// NewRouter makes a client per model of t from base (retries, bounds,
// logger, observer), each with the model's base URL and key. onUsage, if
// not nil, is told each call's model, stage (WithStage; "none" without)
// and priced usage, failed calls too.
func NewRouter(t *modeltable.Table, base OpenAIConfig, onUsage func(model, stage string, u messages.Usage)) (*Router, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("llm: model table: %w", err)
	}
	r := &Router{table: t, clients: map[string]*OpenAI{}, onUsage: onUsage}
	for _, m := range t.Models {
		cfg := base
		cfg.BaseURL, cfg.APIKey = m.BaseURL, m.Key
		c, err := NewOpenAI(cfg)
		if err != nil {
			return nil, fmt.Errorf("llm: model %s: %w", m.Name, err)
		}
		r.clients[m.Name] = c
	}
	return r, nil
}

// route finds the model a call names and checks the prompt fits it.
func (r *Router) route(name string, prompt int) (modeltable.Model, *OpenAI, error) {
	m, ok := r.table.Lookup(name)
	if !ok {
		return m, nil, fmt.Errorf("%w: %q (this llm-worker has %s)", ErrUnknownModel, name, strings.Join(r.table.Names(), ", "))
	}
	// About four bytes a token: a prompt far past the context fails here,
	// before it is paid for, not at the endpoint.
	if m.ContextTokens > 0 && prompt/4 > m.ContextTokens {
		return m, nil, fmt.Errorf("%w: about %d tokens for %s's %d", ErrPromptTooLong, prompt/4, m.Name, m.ContextTokens)
	}
	c := r.clients[m.Name]
	if c == nil { // a name an open table sends to its default's endpoint
		c = r.clients[r.table.Default]
	}
	return m, c, nil
}

func (r *Router) priced(ctx context.Context, m modeltable.Model, u *messages.Usage) {
	u.Cost = m.Cost(*u)
	if r.onUsage != nil && u.Calls > 0 {
		r.onUsage(r.label(m), stageOf(ctx), *u)
	}
}

// OtherModels is the model label, in metrics and usage, of every call an
// open table sends to its default's endpoint under a name it does not
// list: a label per name would let whoever submits jobs make a metric
// series per name they invent.
const OtherModels = "other"

// label is m's name in metrics: its table name, or OtherModels.
func (r *Router) label(m modeltable.Model) string {
	if r.clients[m.Name] == nil {
		return OtherModels
	}
	return m.Name
}

// Structured implements Client.
func (r *Router) Structured(ctx context.Context, req StructuredRequest) (StructuredReply, error) {
	n := 0
	for _, msg := range req.Messages {
		n += len(msg.Content)
	}
	m, c, err := r.route(req.Model, n)
	if err != nil {
		return StructuredReply{}, err
	}
	req.Model = m.RemoteName()
	reply, err := c.Structured(withTableName(ctx, r.label(m)), req)
	r.priced(ctx, m, &reply.Usage)
	return reply, err
}

// Chat is OpenAI.Chat on the model the request names.
func (r *Router) Chat(ctx context.Context, req ChatRequest) (ChatReply, error) {
	n := 0
	for _, msg := range req.Messages {
		n += len(msg.Content)
	}
	m, c, err := r.route(req.Model, n)
	if err != nil {
		return ChatReply{}, err
	}
	req.Model = m.RemoteName()
	reply, err := c.Chat(withTableName(ctx, r.label(m)), req)
	r.priced(ctx, m, &reply.Usage)
	return reply, err
}
