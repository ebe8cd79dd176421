package codemodestages

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// turn does codemode_turn: the conversation rebuilt from the steps, one
// chat call, the reply's program extracted.
func (h *Handlers) turn(ctx context.Context, cmd *messages.StageCommand, in messages.CodeModeTurnInput) (stagework.Output[messages.CodeModeTurnOutput], error) {
	var none stagework.Output[messages.CodeModeTurnOutput]
	if strings.TrimSpace(in.Message) == "" {
		return none, bus.Permanent(errors.New("codemode_turn: the input has no message"))
	}
	if h.cfg.Model == nil {
		return none, bus.Permanent(errors.New("codemode_turn: this llm-worker's model client cannot hold a chat"))
	}
	// The job's model settings, as every model stage applies them
	// (llmstages/settings.go). Code mode's system message has no persona
	// paragraph to replace: options.system_prompt comes first as one,
	// after the prefixes; the instructions after it keep the reply's
	// format, which the stage depends on.
	var s messages.StageSettings
	if cmd.Settings != nil {
		s = *cmd.Settings
	}
	prefix := joinParagraphs(s.SystemPromptPrefix, in.SystemPromptPrefix, s.SystemPrompt)
	sys := codemode.SystemPrompt(codemode.PromptConfig{Prefix: prefix, Tools: in.Tools, Skills: in.Skills, MultiTurn: in.MultiTurn,
		Starlark: in.Interpreter == messages.InterpreterStarlark})
	conv := codemode.Conversation(sys, in.History, in.Message, in.Steps, in.MultiTurn)
	reply, err := h.cfg.Model.Chat(llm.WithStage(ctx, string(cmd.Stage)), llm.ChatRequest{Model: cmd.Model, Messages: conv,
		MaxTokens: s.MaxTokens, Sampling: llm.Sampling{Temperature: s.Temperature, TopP: s.TopP, Seed: s.Seed}})
	if err != nil {
		return stagework.Output[messages.CodeModeTurnOutput]{Usage: reply.Usage}, fmt.Errorf("codemode_turn: %w", err)
	}
	code, prose, ok := codemode.ExtractCode(reply.Content)
	out := messages.CodeModeTurnOutput{Reply: reply.Content, Prose: prose, Cut: codemode.Cut(reply.Content, reply.FinishReason)}
	if ok {
		out.Code = code
	}
	return stagework.Output[messages.CodeModeTurnOutput]{Value: out, Usage: reply.Usage, Messages: []messages.ChatMessage{
		{Role: "user", Content: lastUser(conv), Stage: messages.StageCodeModeTurn},
		{Role: "assistant", Content: reply.Content, Stage: messages.StageCodeModeTurn},
	}}, nil
}

// joinParagraphs joins the texts that are not blank, a blank line apart.
func joinParagraphs(texts ...string) string {
	var out []string
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

// lastUser is the message the model answered, for the job's history.
func lastUser(conv []llm.ChatMessage) string {
	return conv[len(conv)-1].Content
}
