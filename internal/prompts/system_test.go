package prompts_test

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestPersonalize(t *testing.T) {
	t.Parallel()
	plan := prompts.Plan(messages.PlanInput{Task: messages.TaskSpec{Prompt: "Sum the sales.", Outputs: map[string]messages.Type{"total": messages.TypeFloat}}})
	agent := prompts.Agent(messages.AgentTurnInput{Task: messages.TaskSpec{Prompt: "Sum the sales."}})
	for name, msgs := range map[string][]messages.ChatMessage{"plan": plan, "agent": agent} {
		orig := msgs[0].Content
		if got := prompts.Personalize(msgs, "", ""); got[0].Content != orig {
			t.Errorf("%s: empty settings changed the prompt", name)
		}
		got := prompts.Personalize(msgs, "You are a careful data engineer at ACME.", "Answer in British English.")
		sys := got[0].Content
		if !strings.HasPrefix(sys, "Answer in British English.\n\nYou are a careful data engineer at ACME.\n\n") {
			t.Errorf("%s: system message starts %q", name, sys[:min(len(sys), 120)])
		}
		if strings.Contains(sys, "You are a senior Python engineer") {
			t.Errorf("%s: the project's persona is still there", name)
		}
		// The persona goes; the rules and the stage's instructions stay.
		if _, rest, _ := strings.Cut(orig, "\n\n"); !strings.HasSuffix(sys, rest) {
			t.Errorf("%s: the rest of the system message changed", name)
		}
		if msgs[0].Content != orig || got[1] != msgs[1] {
			t.Errorf("%s: the input was modified or the user message changed", name)
		}
		onlyPrefix := prompts.Personalize(msgs, "", "Be brief.")
		if onlyPrefix[0].Content != "Be brief.\n\n"+orig {
			t.Errorf("%s: prefix alone gave %q", name, onlyPrefix[0].Content[:60])
		}
	}
	noSystem := prompts.Personalize([]messages.ChatMessage{{Role: "user", Content: "hi"}}, "Be kind.", "")
	if len(noSystem) != 2 || noSystem[0].Role != "system" || noSystem[0].Content != "Be kind." {
		t.Errorf("no system message: %+v", noSystem)
	}
}
