package codemodestages

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Turn does codemode_turn: the conversation rebuilt from the steps, one
// chat call, the reply's program extracted.
type Turn struct {
	// Model is the chat model; nil fails the stage permanently (a client
	// that cannot chat cannot do code mode).
	Model codemode.Model
}

// Serves implements Stages.
func (Turn) Serves() []messages.Stage { return []messages.Stage{messages.StageCodeModeTurn} }

// Version implements stagework.Handler.
func (Turn) Version(messages.Stage) string { return Version }

// Handle implements stagework.Handler.
func (t Turn) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	if cmd.Stage != messages.StageCodeModeTurn {
		return stagework.Output{}, unknownStage(cmd)
	}
	var in messages.CodeModeTurnInput
	if err := decode(cmd, &in); err != nil {
		return stagework.Output{}, err
	}
	if strings.TrimSpace(in.Message) == "" {
		return stagework.Output{}, stagework.Permanent(errors.New("codemode_turn: the input has no message"))
	}
	if t.Model == nil {
		return stagework.Output{}, stagework.Permanent(errors.New("codemode_turn: this llm-worker's model client cannot hold a chat"))
	}
	sys := codemode.SystemPrompt(codemode.PromptConfig{Prefix: in.SystemPromptPrefix, Tools: in.Tools, Skills: in.Skills, MultiTurn: in.MultiTurn,
		Starlark: in.Interpreter == messages.InterpreterStarlark})
	conv := codemode.Conversation(sys, in.History, in.Message, in.Steps, in.MultiTurn)
	reply, err := t.Model.Chat(ctx, llm.ChatRequest{Model: cmd.Model, Messages: conv})
	if err != nil {
		return stagework.Output{Usage: reply.Usage}, modelFailure(fmt.Errorf("codemode_turn: %w", err))
	}
	code, prose, ok := codemode.ExtractCode(reply.Content)
	out := messages.CodeModeTurnOutput{Reply: reply.Content, Prose: prose}
	if ok {
		out.Code = code
	}
	return stagework.Output{Value: out, Usage: reply.Usage, Messages: []messages.ChatMessage{
		{Role: "user", Content: lastUser(conv), Stage: messages.StageCodeModeTurn},
		{Role: "assistant", Content: reply.Content, Stage: messages.StageCodeModeTurn},
	}}, nil
}

// lastUser is the message the model answered, for the job's history.
func lastUser(conv []llm.ChatMessage) string {
	return conv[len(conv)-1].Content
}

// modelFailure marks a model error for the executor as llm.Classify says.
func modelFailure(err error) error {
	switch v := llm.Classify(err); {
	case v.Permanent:
		return stagework.Permanent(err)
	case v.RetryAfter > 0:
		return stagework.RetryAfter(err, v.RetryAfter)
	}
	return err
}
