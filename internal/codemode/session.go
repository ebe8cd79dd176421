package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Model is the chat model a Session talks to; *llm.OpenAI (go-openai)
// satisfies it.
type Model interface {
	Chat(ctx context.Context, req llm.ChatRequest) (llm.ChatReply, error)
}

// Message is one message of the conversation before the request
// (history): role user or assistant, and content.
type Message = messages.ChatMessage

// Session answers a message by having the model write programs over Tools.
// With MaxTurns > 0 it is multi-turn: each reply's program runs and its
// value comes back as the observation, until a reply without code (the
// answer) or MaxTurns. Otherwise it is single-shot: one program, written
// again on an error up to MaxRetries times, whose value is the answer.
type Session struct {
	Model     Model
	ModelName string // required
	Tools     *Registry
	// Limits bound each program. Starlark (no Interpreter) applies them
	// all; an Interpreter applies them if it is a LimitedInterpreter
	// (*pyexec.Runner applies WallTime, MaxOutputBytes, MaxToolCalls and
	// MaxParallel over its own limits; MaxSteps and MaxAllocBytes are
	// Starlark's), and Run refuses Limits an Interpreter cannot apply.
	// Zero fields mean the defaults.
	Limits Limits
	// Skills are texts put in the system prompt; SkillFiles are read at
	// each Run and put there too.
	Skills             []string
	SkillFiles         []string
	SystemPromptPrefix string
	MaxTurns           int
	// MaxRetries is how many times a single-shot session asks for the
	// program again after a failed one: 0 means no retry, as a job's
	// max_retries: 0 does (a job without max_retries gets
	// DefaultMaxRetries).
	MaxRetries int
	// ObservationBytes is the budget of one observation; 0 means
	// DefaultObservationBytes.
	ObservationBytes int
	// Interpreter runs the programs; nil runs them in Starlark (Run,
	// under Limits). A *pyexec.Runner runs Python in a sandbox.
	Interpreter Interpreter
}

// Interpreter runs one program with tools: the error is an *Error for the
// program's own failures.
type Interpreter interface {
	RunProgram(ctx context.Context, code string, tools *Registry) (Result, error)
}

// LimitedInterpreter is an Interpreter that runs a program under a
// Session's Limits (those that apply to it; zero fields: its own).
type LimitedInterpreter interface {
	Interpreter
	RunProgramLimits(ctx context.Context, code string, tools *Registry, limits Limits) (Result, error)
}

// run runs one program in the session's interpreter.
func (a *Session) run(ctx context.Context, code string) (Result, error) {
	if a.Interpreter != nil {
		if li, ok := a.Interpreter.(LimitedInterpreter); ok && a.Limits != (Limits{}) {
			return li.RunProgramLimits(ctx, code, a.Tools, a.Limits)
		}
		return a.Interpreter.RunProgram(ctx, code, a.Tools)
	}
	return Run(ctx, code, a.Tools, a.Limits)
}

// DefaultMaxRetries is the single-shot retries of a code-mode job that
// does not say (messages.CodeModeSpec.MaxRetries absent); a Session's
// MaxRetries is what it says.
const DefaultMaxRetries = 3

// SessionResult is what Run produced. Error is set when the session gave up
// (max_turns or max_retries reached); Value is then the last value a
// program produced, if any.
type SessionResult struct {
	Code    string  `json:"code"`
	Summary string  `json:"summary"`
	Value   any     `json:"value"`
	Error   string  `json:"error,omitempty"`
	Turns   int     `json:"turns"`
	Events  []Event `json:"events"`
}

// Event is one step of a run, for the caller's log; a code-mode job's
// result lists the same.
type Event = messages.CodeModeEvent

// The Event types.
const (
	EventCode        = "code"
	EventObservation = "observation"
	EventError       = "error"
	EventAnswer      = "answer"
)

// ToolDescriptions returns the session's tools as JSON (see
// Registry.ToolDescriptions).
func (a *Session) ToolDescriptions() ([]byte, error) { return a.Tools.ToolDescriptions() }

// Run answers message after history. The error is for what stops the
// session itself (the model unreachable, a skill file unreadable); a
// program's failures are in the result.
func (a *Session) Run(ctx context.Context, message string, history []Message) (SessionResult, error) {
	if a.Model == nil || a.ModelName == "" {
		return SessionResult{}, errors.New("codemode: a session without a model")
	}
	if a.MaxTurns < 0 || a.MaxRetries < 0 {
		return SessionResult{}, errors.New("codemode: max_turns and max_retries must not be negative")
	}
	if _, limited := a.Interpreter.(LimitedInterpreter); a.Interpreter != nil && !limited && a.Limits != (Limits{}) {
		return SessionResult{}, fmt.Errorf("codemode: the interpreter %T does not apply Session.Limits; set its own limits", a.Interpreter)
	}
	sys, err := a.systemPrompt()
	if err != nil {
		return SessionResult{}, err
	}
	s := &session{a: a, system: sys, history: history, message: message}
	if a.MaxTurns > 0 {
		return s.multiTurn(ctx)
	}
	return s.singleShot(ctx)
}

func (a *Session) systemPrompt() (string, error) {
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
	return SystemPrompt(PromptConfig{Prefix: a.SystemPromptPrefix, Tools: tools, Skills: skills, MultiTurn: a.MaxTurns > 0, Starlark: a.Interpreter == nil}), nil
}

// session is one Run's conversation and result.
type session struct {
	a       *Session
	system  string
	history []Message
	message string
	steps   []messages.CodeModeStep
	res     SessionResult
}

// ask sends the conversation so far; the caller appends the reply's step.
// cut says the reply has no whole program and was cut short (Cut).
func (s *session) ask(ctx context.Context) (reply string, cut bool, err error) {
	conv := Conversation(s.system, s.history, s.message, s.steps, s.a.MaxTurns > 0)
	r, err := s.a.Model.Chat(ctx, llm.ChatRequest{Model: s.a.ModelName, Messages: conv})
	if err != nil {
		return "", false, fmt.Errorf("codemode: model: %w", err)
	}
	return r.Content, Cut(r.Content, r.FinishReason), nil
}

// cutShort records a reply that was cut short (Cut), to be asked again.
func (s *session) cutShort(turn int, reply string) {
	const why = "the reply was cut off before it ended (or was empty)"
	s.event(Event{Turn: turn, Type: EventError, Error: why})
	s.steps = append(s.steps, messages.CodeModeStep{Reply: reply, Cut: true})
}

func (s *session) event(e Event) { s.res.Events = append(s.res.Events, e) }

// multiTurn runs turns until an answer or MaxTurns.
func (s *session) multiTurn(ctx context.Context) (SessionResult, error) {
	for turn := 1; turn <= s.a.MaxTurns; turn++ {
		s.res.Turns = turn
		reply, cut, err := s.ask(ctx)
		if err != nil {
			return s.res, err
		}
		if cut {
			s.cutShort(turn, reply)
			continue
		}
		code, prose, ok := ExtractCode(reply)
		if !ok {
			s.res.Summary = prose
			s.event(Event{Turn: turn, Type: EventAnswer, Text: prose})
			return s.res, nil
		}
		s.res.Code = code
		s.event(Event{Turn: turn, Type: EventCode, Code: code})
		res, runErr := s.a.run(ctx, code)
		if runErr == nil {
			s.res.Value = res.Value
		}
		obs := Observation(res, runErr, s.a.ObservationBytes)
		s.event(Event{Turn: turn, Type: EventObservation, Observation: obs})
		s.steps = append(s.steps, messages.CodeModeStep{Reply: reply, Observation: obs, Failed: runErr != nil})
	}
	s.res.Error = messages.MaxTurnsReason(s.a.MaxTurns)
	return s.res, nil
}

// singleShot asks for a program and retries it on errors.
func (s *session) singleShot(ctx context.Context) (SessionResult, error) {
	retries := s.a.MaxRetries
	var last string
	for attempt := 1; attempt <= retries+1; attempt++ {
		s.res.Turns = attempt
		reply, cut, err := s.ask(ctx)
		if err != nil {
			return s.res, err
		}
		if cut {
			last = "the reply was cut off before it ended (or was empty)"
			s.cutShort(attempt, reply)
			continue
		}
		code, prose, ok := ExtractCode(reply)
		if !ok {
			last = "no code block in the reply"
			s.event(Event{Turn: attempt, Type: EventError, Error: last, Text: prose})
			s.steps = append(s.steps, messages.CodeModeStep{Reply: reply, NoCode: true})
			continue
		}
		s.res.Code, s.res.Summary = code, prose
		s.event(Event{Turn: attempt, Type: EventCode, Code: code})
		res, runErr := s.a.run(ctx, code)
		if runErr == nil {
			s.res.Value = res.Value
			s.event(Event{Turn: attempt, Type: EventObservation, Observation: Observation(res, nil, s.a.ObservationBytes)})
			return s.res, nil
		}
		last = ErrorText(runErr)
		s.event(Event{Turn: attempt, Type: EventError, Error: last})
		s.steps = append(s.steps, messages.CodeModeStep{Reply: reply, Observation: Observation(res, runErr, s.a.ObservationBytes), Failed: true})
	}
	s.res.Error = messages.MaxRetriesReason(retries+1, last)
	return s.res, nil
}

// MarshalValue is the JSON of a result value (null when there is none).
func MarshalValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
