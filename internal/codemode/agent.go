package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/autocoder/autocoder/internal/llm"
)

// Model is the chat model an Agent talks to; *llm.OpenAI (go-openai)
// satisfies it.
type Model interface {
	Chat(ctx context.Context, req llm.ChatRequest) (llm.ChatReply, error)
}

// Message is one message of the conversation before the request (history).
type Message struct {
	Role    string `json:"role"` // user or assistant
	Content string `json:"content"`
}

// Agent answers a message by having the model write programs over Tools.
// With MaxTurns > 0 it is multi-turn: each reply's program runs and its
// value comes back as the observation, until a reply without code (the
// answer) or MaxTurns. Otherwise it is single-shot: one program, written
// again on an error up to MaxRetries times, whose value is the answer.
type Agent struct {
	Model     Model
	ModelName string // required
	Tools     *Registry
	Limits    Limits
	// Skills are texts put in the system prompt; SkillFiles are read at
	// each Run and put there too.
	Skills             []string
	SkillFiles         []string
	SystemPromptPrefix string
	MaxTurns           int
	MaxRetries         int // single-shot only; 0 means DefaultMaxRetries
	// ObservationBytes is the budget of one observation; 0 means
	// DefaultObservationBytes.
	ObservationBytes int
}

// DefaultMaxRetries is the single-shot default of Agent.MaxRetries.
const DefaultMaxRetries = 3

// AgentResult is what Run produced. Error is set when the agent gave up
// (max_turns or max_retries reached); Value is then the last value a
// program produced, if any.
type AgentResult struct {
	Code    string  `json:"code"`
	Summary string  `json:"summary"`
	Value   any     `json:"value"`
	Error   string  `json:"error,omitempty"`
	Turns   int     `json:"turns"`
	Events  []Event `json:"events"`
}

// Event is one step of a run, for the caller's log.
type Event struct {
	Turn        int    `json:"turn"`
	Type        string `json:"type"` // code, observation, error, answer
	Code        string `json:"code,omitempty"`
	Observation string `json:"observation,omitempty"`
	Error       string `json:"error,omitempty"`
	Text        string `json:"text,omitempty"`
}

// The Event types.
const (
	EventCode        = "code"
	EventObservation = "observation"
	EventError       = "error"
	EventAnswer      = "answer"
)

// ToolDescriptions returns the agent's tools as JSON (see
// Registry.ToolDescriptions).
func (a *Agent) ToolDescriptions() ([]byte, error) { return a.Tools.ToolDescriptions() }

// Run answers message after history. The error is for what stops the
// agent itself (the model unreachable, a skill file unreadable); a
// program's failures are in the result.
func (a *Agent) Run(ctx context.Context, message string, history []Message) (AgentResult, error) {
	if a.Model == nil || a.ModelName == "" {
		return AgentResult{}, errors.New("codemode: agent without a model")
	}
	if a.MaxTurns < 0 || a.MaxRetries < 0 {
		return AgentResult{}, errors.New("codemode: max_turns and max_retries must not be negative")
	}
	sys, err := a.systemPrompt()
	if err != nil {
		return AgentResult{}, err
	}
	conv := []llm.ChatMessage{{Role: "system", Content: sys}}
	for _, m := range history {
		conv = append(conv, llm.ChatMessage{Role: m.Role, Content: m.Content})
	}
	conv = append(conv, llm.ChatMessage{Role: "user", Content: message})
	s := &session{a: a, conv: conv}
	if a.MaxTurns > 0 {
		return s.multiTurn(ctx)
	}
	return s.singleShot(ctx)
}

func (a *Agent) systemPrompt() (string, error) {
	tools, err := a.Tools.ToolDescriptions()
	if err != nil {
		return "", fmt.Errorf("codemode: tool descriptions: %w", err)
	}
	skills := append([]string(nil), a.Skills...)
	for _, path := range a.SkillFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("codemode: skill file: %w", err)
		}
		skills = append(skills, string(b))
	}
	return SystemPrompt(PromptConfig{Prefix: a.SystemPromptPrefix, Tools: tools, Skills: skills, MultiTurn: a.MaxTurns > 0}), nil
}

// session is one Run's conversation and result.
type session struct {
	a    *Agent
	conv []llm.ChatMessage
	res  AgentResult
}

func (s *session) ask(ctx context.Context) (string, error) {
	reply, err := s.a.Model.Chat(ctx, llm.ChatRequest{Model: s.a.ModelName, Messages: s.conv})
	if err != nil {
		return "", fmt.Errorf("codemode: model: %w", err)
	}
	s.conv = append(s.conv, llm.ChatMessage{Role: "assistant", Content: reply.Content})
	return reply.Content, nil
}

func (s *session) event(e Event) { s.res.Events = append(s.res.Events, e) }

// multiTurn runs turns until an answer or MaxTurns.
func (s *session) multiTurn(ctx context.Context) (AgentResult, error) {
	for turn := 1; turn <= s.a.MaxTurns; turn++ {
		s.res.Turns = turn
		reply, err := s.ask(ctx)
		if err != nil {
			return s.res, err
		}
		code, prose, ok := ExtractCode(reply)
		if !ok {
			s.res.Summary = prose
			s.event(Event{Turn: turn, Type: EventAnswer, Text: prose})
			return s.res, nil
		}
		s.res.Code = code
		s.event(Event{Turn: turn, Type: EventCode, Code: code})
		res, runErr := Run(ctx, code, s.a.Tools, s.a.Limits)
		if runErr == nil {
			s.res.Value = res.Value
		}
		obs := Observation(res, runErr, s.a.ObservationBytes)
		s.event(Event{Turn: turn, Type: EventObservation, Observation: obs})
		s.conv = append(s.conv, llm.ChatMessage{Role: "user", Content: "Observation:\n" + obs})
	}
	s.res.Error = MaxTurnsReason(s.a.MaxTurns)
	return s.res, nil
}

// MaxTurnsReason is the result's error when the turns ran out.
func MaxTurnsReason(maxTurns int) string {
	return fmt.Sprintf("max_turns reached: %d turns without a final answer (a reply with no code block)", maxTurns)
}

// MaxRetriesReason is the result's error when the retries ran out.
func MaxRetriesReason(attempts int, last string) string {
	return fmt.Sprintf("max_retries reached: no program succeeded in %d attempts; last error: %s", attempts, last)
}

// NoCodeFeedback is what the model is told when a single-shot reply has
// no program.
const NoCodeFeedback = "Your reply has no code block. Reply with the program in one fenced code block."

// singleShot asks for a program and retries it on errors.
func (s *session) singleShot(ctx context.Context) (AgentResult, error) {
	retries := s.a.MaxRetries
	if retries == 0 {
		retries = DefaultMaxRetries
	}
	var last string
	for attempt := 1; attempt <= retries+1; attempt++ {
		s.res.Turns = attempt
		reply, err := s.ask(ctx)
		if err != nil {
			return s.res, err
		}
		code, prose, ok := ExtractCode(reply)
		if !ok {
			last = "no code block in the reply"
			s.event(Event{Turn: attempt, Type: EventError, Error: last, Text: prose})
			s.conv = append(s.conv, llm.ChatMessage{Role: "user", Content: NoCodeFeedback})
			continue
		}
		s.res.Code, s.res.Summary = code, prose
		s.event(Event{Turn: attempt, Type: EventCode, Code: code})
		res, runErr := Run(ctx, code, s.a.Tools, s.a.Limits)
		if runErr == nil {
			s.res.Value = res.Value
			s.event(Event{Turn: attempt, Type: EventObservation, Observation: Observation(res, nil, s.a.ObservationBytes)})
			return s.res, nil
		}
		last = ErrorText(runErr)
		s.event(Event{Turn: attempt, Type: EventError, Error: last})
		s.conv = append(s.conv, llm.ChatMessage{Role: "user", Content: RetryFeedback(Observation(res, runErr, s.a.ObservationBytes))})
	}
	s.res.Error = MaxRetriesReason(retries+1, last)
	return s.res, nil
}

// RetryFeedback is the message that gives a failed program's error back
// to the model.
func RetryFeedback(observation string) string {
	return "The program failed:\n" + observation + "\nFix it and reply with the whole corrected program in one code block."
}

// MarshalValue is the JSON of a result value (null when there is none).
func MarshalValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
