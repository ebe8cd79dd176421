package llmstages

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ChatClient is a model client that can make tool calls (llm.OpenAI is one).
type ChatClient interface {
	Chat(ctx context.Context, req llm.ChatRequest) (llm.ChatReply, error)
}

// maxAgentToolCalls bounds the calls of one turn: a model that asks for
// more gets the first ones run.
const maxAgentToolCalls = 20

// agentTools are Contract 7's tools with their JSON Schemas.
var agentTools = []llm.Tool{
	{Name: messages.ToolWriteFile, Description: "Create or replace a file in the workspace.",
		Parameters: objectSchema(map[string]string{"path": "a path relative to the workspace", "content": "the whole new content"}, "path", "content")},
	{Name: messages.ToolReadFile, Description: "Read a file of the workspace.",
		Parameters: objectSchema(map[string]string{"path": "a path relative to the workspace"}, "path")},
	{Name: messages.ToolEditFile, Description: "Replace the one exact occurrence of old with new in a file.",
		Parameters: objectSchema(map[string]string{"path": "a path relative to the workspace", "old": "the exact text to replace; it must occur once", "new": "the replacement"}, "path", "old", "new")},
	{Name: messages.ToolListFiles, Description: "List the files under a directory of the workspace.",
		Parameters: objectSchema(map[string]string{"path": `a directory relative to the workspace; "." for all`}, "path")},
	{Name: messages.ToolBash, Description: "Run a bash command in the sandbox, in the workspace, without network. A policy refuses what it does not allow, with the reason.",
		Parameters: objectSchema(map[string]string{"command": "the bash command"}, "command")},
	{Name: messages.ToolRunTests, Description: "Run pytest on test_solution.py in the sandbox, with the packages of packages.txt installed.",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
}

func objectSchema(props map[string]string, required ...string) json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	p := map[string]prop{}
	for k, d := range props {
		p[k] = prop{Type: "string", Description: d}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": p, "required": required, "additionalProperties": false})
	return b
}

// agentDeps are what agent_turn depends on: the agent's prompt texts and
// the tools' schemas.
func agentDeps() []stagework.Option {
	b, _ := json.Marshal(agentTools)
	sum := sha256.Sum256(b)
	return []stagework.Option{stagework.DependsOn("prompts", prompts.AgentVersion), stagework.DependsOn("tools", hex.EncodeToString(sum[:6]))}
}

// agentTurn makes one model call with the conversation and the tools.
func (h *Handlers) agentTurn(ctx context.Context, cmd *messages.StageCommand, in messages.AgentTurnInput) (stagework.Output[messages.AgentTurnOutput], error) {
	var out stagework.Output[messages.AgentTurnOutput]
	if err := requireTask(cmd.Stage, in.Task); err != nil {
		return out, err
	}
	chat, ok := h.client.(ChatClient)
	if !ok {
		return out, bus.Permanent(fmt.Errorf("%w: the model client cannot make tool calls, which the agent backend needs", ErrBadInput))
	}
	head := personalize(cmd, prompts.Agent(in)) // settings.go
	if err := h.checkPromptSize(cmd.Stage, agentPromptSize(head, in.Messages)); err != nil {
		return out, err
	}
	sampling, maxTokens := h.sampling(cmd) // settings.go
	req := llm.ChatRequest{Model: cmp.Or(cmd.Model, h.cfg.Model), Tools: agentTools, MaxTokens: maxTokens, Sampling: sampling,
		Messages: agentConversation(head, in.Messages)}
	reply, err := chat.Chat(llm.WithStage(ctx, string(cmd.Stage)), req)
	out.Usage = reply.Usage
	if err != nil {
		return out, fmt.Errorf("%s: %w", cmd.Stage, err)
	}
	turn, note := turnOf(reply, in.Turn)
	if note != "" {
		out.Notes = append(out.Notes, note)
	}
	if turn.Content == "" && len(turn.ToolCalls) == 0 && reply.FinishReason == "length" {
		return out, invalid(cmd.Stage, "the reply was cut off at the token limit before any content or tool call")
	}
	out.Value = turn
	out.Messages = agentTranscript(cmd.Stage, in.Turn, head, turn)
	return out, nil
}

// agentConversation is the turn's request: the rules and the task, then
// the conversation so far with its tool calls.
func agentConversation(head []messages.ChatMessage, turns []messages.AgentMessage) []llm.ChatMessage {
	out := make([]llm.ChatMessage, 0, len(head)+len(turns))
	for _, m := range head {
		out = append(out, llm.ChatMessage{Role: m.Role, Content: m.Content})
	}
	for _, m := range turns {
		out = append(out, llm.ChatMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ToolCalls: toLLMCalls(m.ToolCalls)})
	}
	return out
}

// turnOf is a reply as the turn's output: its content and at most
// maxAgentToolCalls tool calls, each with an ID (the model's, or one made
// from the turn); note says when calls were dropped.
func turnOf(reply llm.ChatReply, turn int) (out messages.AgentTurnOutput, note string) {
	out = messages.AgentTurnOutput{Content: reply.Content, FinishReason: reply.FinishReason}
	for i, c := range reply.ToolCalls {
		if i == maxAgentToolCalls {
			note = fmt.Sprintf("the model asked for %d tool calls in one turn; the first %d run", len(reply.ToolCalls), maxAgentToolCalls)
			break
		}
		out.ToolCalls = append(out.ToolCalls, messages.AgentToolCall{ID: cmp.Or(c.ID, fmt.Sprintf("call_%d_%d", turn, i+1)), Name: c.Name, Arguments: c.Arguments})
	}
	return out, note
}

// agentPromptSize is the prompt as checkPromptSize counts it.
func agentPromptSize(head []messages.ChatMessage, turns []messages.AgentMessage) []messages.ChatMessage {
	out := append([]messages.ChatMessage(nil), head...)
	for _, m := range turns {
		n := m.Content
		for _, c := range m.ToolCalls {
			n += c.Arguments
		}
		out = append(out, messages.ChatMessage{Role: m.Role, Content: n})
	}
	return out
}

func toLLMCalls(cs []messages.AgentToolCall) []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range cs {
		out = append(out, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}

// agentTranscript is what the turn adds to the job's conversation history:
// the rules and the task on the first turn, then the assistant's message
// with its tool calls written out.
func agentTranscript(stage messages.Stage, turn int, head []messages.ChatMessage, t messages.AgentTurnOutput) []messages.ChatMessage {
	var out []messages.ChatMessage
	if turn <= 1 {
		for _, m := range head {
			m.Stage = stage
			out = append(out, m)
		}
	}
	var b strings.Builder
	b.WriteString(t.Content)
	for _, c := range t.ToolCalls {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[tool call %s %s]", c.Name, c.Arguments)
	}
	return append(out, messages.ChatMessage{Role: "assistant", Content: b.String(), Stage: stage})
}
