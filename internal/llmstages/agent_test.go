package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAgentTurn sends a turn through the real OpenAI client to the fake
// server: the six tools with their schemas, the rules and the task first,
// then the conversation with its tool calls and results; the reply's calls
// come back as the stage's output.
func TestAgentTurn(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema, fakellm.ToolCalls(
		fakellm.Call(messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": "x = 1\n"}),
		fakellm.Call(messages.ToolRunTests, map[string]any{})))
	client, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: fake.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandlers(t, client, Config{})
	in := messages.AgentTurnInput{Task: messages.TaskSpec{Prompt: "return one"}, Turn: 2, MaxTurns: 50,
		Messages: []messages.AgentMessage{
			{Role: "assistant", ToolCalls: []messages.AgentToolCall{{ID: "c1", Name: "list_files", Arguments: `{"path":"."}`}}},
			{Role: "tool", ToolCallID: "c1", Content: "(no files)"},
		}}
	out, err := h.Handle(context.Background(), command(t, messages.StageAgentTurn, in))
	if err != nil {
		t.Fatal(err)
	}
	turn := value[messages.AgentTurnOutput](t, out)
	if len(turn.ToolCalls) != 2 || turn.ToolCalls[0].Name != messages.ToolWriteFile || turn.ToolCalls[0].ID == "" {
		t.Fatalf("turn %+v", turn)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
		var schema map[string]any
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("tool %s parameters %s", tool.Name, tool.Parameters)
		}
	}
	if strings.Join(names, ",") != strings.Join(messages.AgentTools(), ",") {
		t.Errorf("tools offered %v, want %v", names, messages.AgentTools())
	}
	if len(r.Messages) != 4 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[1].Content, "return one") ||
		len(r.Messages[2].ToolCalls) != 1 || r.Messages[3].ToolCallID != "c1" {
		t.Errorf("messages sent %+v", r.Messages)
	}
	if out.Usage.Calls != 1 || len(out.Messages) != 1 || !strings.Contains(out.Messages[0].Content, "[tool call write_file") {
		t.Errorf("usage %+v, transcript %+v", out.Usage, out.Messages)
	}
	if v := h.Version(messages.StageAgentTurn); !strings.Contains(v, "prompts@"+prompts.AgentVersion) || !strings.Contains(v, "tools@") {
		t.Errorf("agent_turn's version %q does not name its prompts and tools", v)
	}
}

// TestAgentTurnNeedsToolCalls: a client without tool calls fails the stage
// as bad input, before anything is sent.
func TestAgentTurnNeedsToolCalls(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &fakeClient{}, Config{})
	_, err := h.Handle(context.Background(), command(t, messages.StageAgentTurn, messages.AgentTurnInput{Task: messages.TaskSpec{Prompt: "x"}}))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "tool calls") {
		t.Fatalf("err %v", err)
	}
}
